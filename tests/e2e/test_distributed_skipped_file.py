"""``TRAVERSE_SKIPPED`` with ``REDIS_URL``: two workers on a real redis-server write each
seed's skipped file once, byte for byte the single-process crawl's."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

from tests.e2e.test_skipped_file import BUDGETS, expected, skipping_site
from tests.support.cli import crawl_args
from tests.support.distributed_site import finish, start, wait_for_worker
from tests.support.jobdir_helpers import comparable
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

pytestmark = pytest.mark.redis

SECTIONS, PER_SECTION = 8, 12
EXT = ".skipped.jsonl"
LARGER = [
    "-s", "TRAVERSE_MAX_DEPTH=2", "-s", "TRAVERSE_MAX_PAGES=60",
    "-s", "TRAVERSE_MAX_LINKS_PER_PAGE=10",
]  # fmt: skip


def mixed_site(server: Server) -> None:
    """Sections of pages, each page with links of every kind, answered in shuffled times:
    pages finish out of BFS order, at any worker."""
    rng = random.Random(7)
    home = "".join(f'<a href="/s{s}/">section {s}</a>' for s in range(SECTIONS))
    pages: dict[str, str | Reply] = {"/": home + '<a href="http://elsewhere.invalid/">x</a>'}
    for s in range(SECTIONS):
        links = "".join(f'<a href="/s{s}/p{p}">p{p}</a>' for p in range(PER_SECTION))
        pages[f"/s{s}/"] = Reply(body=links, delay=rng.uniform(0, 0.05))
        for p in range(PER_SECTION):
            body = (
                f'<a href="/s{s}/p{(p + 1) % PER_SECTION}">next</a>'
                f'<a href="http://elsewhere.invalid/{s}/{p}">off</a>'
                f'<a href="mailto:s{s}@example.com">mail</a>'
                f'<a href="/deep/{s}/{p}">deeper</a>'
                f'<a href="/s{(s + 1) % SECTIONS}/p{p}">across</a>'
            )
            pages[f"/s{s}/p{p}"] = Reply(body=body, delay=rng.uniform(0, 0.03))
    server.site(pages)


def command(
    tmp: Path, seeds: Path, origins: list[str], *extra: str, skipped: bool = True
) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "traverse", *crawl_args(tmp, *origins),
        "-a", f"seeds={seeds}", "-s", f"TRAVERSE_SKIPPED={skipped}", "-s", "LOGSTATS_INTERVAL=0",
        "-s", "CONCURRENT_REQUESTS=4", "-s", "TRAVERSE_LEASE_TIMEOUT=60",
        "-s", "TRAVERSE_IDLE_TIMEOUT=20", *extra,
    ]  # fmt: skip


def written(tmp: Path) -> dict[str, object]:
    """Every file of the manifest directory: a skipped file's bytes, a manifest without
    what differs between two runs (fetch times)."""
    out: dict[str, object] = {}
    for path in sorted((tmp / "manifests").iterdir()):
        if path.name.endswith(EXT):
            out[path.name] = path.read_bytes()
        else:
            out[path.name] = comparable(json.loads(path.read_text(encoding="utf-8")))
    return out


def stat(stderr: str, name: str) -> int:
    """A worker's final stat, from the stats Scrapy dumps at the end of its log."""
    found = re.search(rf"'{re.escape(name)}': (\d+)", stderr)
    return int(found.group(1)) if found else 0


@pytest.mark.parametrize(
    "budgets",
    [BUDGETS, LARGER],  # the single-origin test site, with every reason; more pages
    ids=["small-budget", "larger-budget"],
)
def test_two_workers_write_the_single_process_skipped_files(
    server,
    server2,
    redis_server,  # noqa: F811
    tmp_path,
    budgets,
):
    skipping_site(server)
    mixed_site(server2)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"site\t{server.url('/')}\nmixed\t{server2.url('/')}\n", encoding="utf-8")
    origins = [server.origin, server2.origin]

    single = tmp_path / "single"
    [(status, err)] = finish([start(command(single, seeds, origins, *budgets))])
    assert status == 0, err[-3000:]
    reference = written(single)
    names = [source_dir_name(s) + ext for s in ("site", "mixed") for ext in (".json", EXT)]
    assert sorted(reference) == sorted(names)

    shared = tmp_path / "shared"
    redis = ("-s", f"REDIS_URL={redis_server.url}")
    first = start(command(shared, seeds, origins, *budgets, *redis))
    wait_for_worker(redis_server.url, first)
    second = start(command(shared, seeds, origins, *budgets, *redis))
    results = finish([first, second])
    for status, err in results:
        assert status == 0, err[-3000:]
        assert "every manifest written" in err
    assert written(shared) == reference  # no temporary file left either
    # Once per seed, by the worker that took its manifest task.
    assert sum(stat(err, "manifest/skipped_written") for _, err in results) == 2
    assert sum(stat(err, "distributed/manifests") for _, err in results) == 2
    if budgets is BUDGETS:
        path = shared / "manifests" / (source_dir_name("site") + EXT)
        lines = path.read_text(encoding="utf-8").splitlines()
        assert [json.loads(line) for line in lines] == expected(server)
    else:
        assert len(reference[source_dir_name("mixed") + EXT].splitlines()) > 60

    # A worker without TRAVERSE_SKIPPED would record pages without their other links.
    off = command(shared, seeds, origins, *budgets, *redis, skipped=False)
    [(status, err)] = finish([start(off)])
    assert status == 2, err[-3000:]
    assert "TRAVERSE_SKIPPED: this worker has False, but crawl 'traverse' in Redis has True" in err
