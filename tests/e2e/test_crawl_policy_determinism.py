"""A crawl policy keeps every guarantee: the same manifest at any concurrency, after a
JOBDIR resume, and with Redis workers, under a non-default scope, exclude patterns,
trap guards and the ``no-tracking`` seen key (docs/crawling-real-sites.md)."""

from __future__ import annotations

import collections
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, scrapy_env
from tests.support.distributed_site import (
    command,
    finish,
    manifests,
    site_servers,  # noqa: F401  (fixture)
    start,
)
from tests.support.jobdir_helpers import (
    comparable,
    crawl_command,
    long_site,
    manifest,
    page_hits,
    run,
    stop,
    wait_for_pages,
)
from tests.support.jobdir_helpers import start as start_crawl
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.server import Reply, Server

POLICY = [
    "-s", "TRAVERSE_SCOPE=host",
    "-s", 'TRAVERSE_EXCLUDE=["/s1/", "p7$"]',
    "-s", "TRAVERSE_TRAP_GUARDS=True",
    "-s", "TRAVERSE_SEEN_KEY=no-tracking",
    "-s", "TRAVERSE_SKIPPED=True",
    "-s", "TRAVERSE_MAX_DEPTH=3",
]  # fmt: skip


def tracked_site(server: Server, sections: int = 20, per_section: int = 15) -> None:
    """The resume tests' BFS tree, whose home page links every section twice: first
    with a tracking parameter, then without (one page under ``no-tracking``); and a
    calendar-like loop of path segments (a trap from its fourth repeat)."""
    long_site(server, sections=sections, per_section=per_section)
    home = "".join(
        f'<a href="/s{s}/?utm_source=home">{s}</a><a href="/s{s}/">{s}</a>' for s in range(sections)
    )
    loop = '<a href="/cal/a/a/a">3</a><a href="/cal/a/a/a/a">4</a>'
    server.site({"/": Reply(body=home + loop, delay=0.005), "/cal/a/a/a": "<p>3</p>"})
    server.site({"/cal/a/a/a/a": "<p>4</p>"})


def test_the_policy_manifest_is_the_same_at_concurrency_1_and_16_and_after_resumes(
    server: Server, tmp_path: Path
) -> None:
    tracked_site(server)

    def reference(name: str, concurrency: str) -> dict[str, Any]:
        cmd = crawl_command(
            server, tmp_path / name, *POLICY, "-s", f"CONCURRENT_REQUESTS={concurrency}"
        )
        done = run(cmd)
        assert done.returncode == 0, done.stderr[-2000:]
        return comparable(manifest(tmp_path / name))

    expected = reference("c1", "1")
    assert reference("c16", "16") == expected
    urls = [page[1] for page in expected["pages"]]
    # The policy shaped the crawl: the first spelling kept, excluded and trap URLs left out.
    assert server.url("/s0/?utm_source=home") in urls and server.url("/s0/") not in urls
    assert not [u for u in urls if "/s1/" in u or u.endswith("p7")]
    assert server.url("/cal/a/a/a") in urls and server.url("/cal/a/a/a/a") not in urls
    with server.lock:
        server.hits.clear()

    jobdir = ["-s", f"JOBDIR={tmp_path / 'job'}"]
    for point in (1, 40, 120):
        proc = start_crawl(crawl_command(server, tmp_path, *POLICY, *jobdir))
        wait_for_pages(server, proc, point)
        stop(proc, signal.SIGINT)
        assert proc.returncode == 0
    # A resume under another policy is refused, naming what differs; nothing is requested.
    before = len(server.paths())
    other = run(crawl_command(server, tmp_path, *POLICY, "-s", "TRAVERSE_SCOPE=prefix", *jobdir))
    assert other.returncode == 2
    assert "JOBDIR" in other.stderr and "TRAVERSE_SCOPE='host', not 'prefix'" in other.stderr
    assert len(server.paths()) == before
    done = run(crawl_command(server, tmp_path, *POLICY, *jobdir, seed=False))
    assert done.returncode == 0, done.stderr[-2000:]
    assert comparable(manifest(tmp_path)) == expected
    counts = collections.Counter(page_hits(server))
    assert [path for path, n in counts.items() if n > 1] == []


@pytest.mark.redis
def test_two_redis_workers_make_the_single_process_policy_manifests(
    site_servers: list[Server],  # noqa: F811
    redis_server: RedisServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    for server in site_servers:
        tracked_site(server, sections=6)
    done = subprocess.run(
        command(tmp_path / "reference", site_servers, None, *POLICY),
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    expected = manifests(tmp_path / "reference")
    skipped = sorted((tmp_path / "reference" / "manifests").glob("*.skipped.jsonl"))
    assert len(expected) == len(site_servers) and len(skipped) == len(site_servers)
    first = expected[sorted(expected)[0]]
    assert [p for p in first["pages"] if "utm_source" in p[1]]  # the first spelling kept

    url, lease = redis_server.url, ("-s", "TRAVERSE_LEASE_TIMEOUT=60")
    workers = [
        start(command(tmp_path, site_servers, url, *lease, *POLICY)),
        start(command(tmp_path, site_servers, url, *lease, *POLICY, seeds=False)),
    ]
    for status, err in finish(workers):
        assert status == 0, err[-3000:]
    assert manifests(tmp_path) == expected
    for path in skipped:
        mine = tmp_path / "manifests" / path.name
        assert mine.read_bytes() == path.read_bytes()

    # A worker whose policy differs is refused at start, naming the setting.
    other = [*POLICY, "-s", "TRAVERSE_SEEN_KEY=sorted-query"]
    refused = subprocess.run(
        command(tmp_path, site_servers, url, *other), cwd=REPO, env=scrapy_env(),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert "TRAVERSE_SEEN_KEY: this worker has 'sorted-query', but crawl 'traverse'" in (
        refused.stderr
    )
