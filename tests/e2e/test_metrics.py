"""``TRAVERSE_METRICS_PORT``: ``/metrics`` scraped during a slow crawl grows and ends at the
manifest's counts; bound to 127.0.0.1 by default; a busy port is exit 2 naming the setting."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env, wait_for
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.support.server import Reply, Server


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(port: int, host: str = "127.0.0.1") -> Samples:
    """Every sample of ``/metrics``: (name, sorted labels) -> value; {} while not served."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode("utf-8")
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return {}
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def pages(samples: Samples, seed: str) -> dict[str, float]:
    return {
        dict(labels)["outcome"]: value
        for (name, labels), value in samples.items()
        if name == "traverse_pages_total" and dict(labels)["seed"] == seed
    }


def test_metrics_grow_during_a_slow_crawl_and_end_at_the_manifest_counts(server, server2, tmp_path):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(20))
    site = {f"/p{i}": Reply(body=f"page {i}", delay=0.1) for i in range(20)}
    site["/p3"] = Reply(status=404, body="gone", delay=0.1)
    server.site({"/": links, **site})
    port = free_port()
    slow = server2
    # A second seed whose one page is slower than the whole first seed: the crawl
    # is still running (and serving) when the first seed's manifest is written.
    slow.site({"/": Reply(body="slow", delay=8.0)})
    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text(
        json.dumps({"id": "fast", "url": server.url("/")})
        + "\n"
        + json.dumps({"id": "slow", "url": slow.url("/")})
        + "\n"
    )
    manifests = tmp_path / "manifests"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={seeds}",
            *crawl_args(tmp_path, server.origin, slow.origin),
            "-s", "TRAVERSE_MAX_PAGES=15", "-s", "TRAVERSE_MIN_DELAY=0.1",
            "-s", f"TRAVERSE_METRICS_PORT={port}",
        ],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: sum(pages(scrape(port), "fast").values()) >= 2, "pages counted")
        first = scrape(port)
        wait_for(lambda: list(manifests.glob("fast-*.json")), "the fast seed's manifest")
        last = scrape(port)  # the slow seed's page is still on its way
        outcome = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, outcome[1][-3000:]

    # Counters grow.
    assert sum(pages(last, "fast").values()) > sum(pages(first, "fast").values())
    ok = ("traverse_requests_total", (("status", "200"),))
    assert last[ok] > first[ok]
    size = ("traverse_response_bytes_total", ())
    assert last[size] > first[size] > 0
    count = ("traverse_fetch_seconds_count", ())
    assert last[count] > first[count]
    assert first[("traverse_queued", (("seed", "fast"),))] > 0

    # The fast seed's final figures are its manifest's.
    (manifest,) = manifests.glob("fast-*.json")
    recorded = json.loads(manifest.read_text())["pages"]
    kinds = Counter(p["fetch"].get("error", {}).get("kind", "ok") for p in recorded)
    assert pages(last, "fast") == {"ok": 14, "http-error": 1} == dict(kinds)
    assert last[("traverse_queued", (("seed", "fast"),))] == 0
    # 15 pages and robots.txt of each origin; the slow page is still on its way.
    assert last[("traverse_requests_total", (("status", "404"),))] == 1 + 2  # p3, two robots.txt
    assert last[ok] == 14
    assert last[("traverse_in_flight", ())] == 1
    assert last[("traverse_snapshot_writes_total", (("result", "stored"),))] == 14
    assert last[("traverse_manifest_writes_total", (("result", "written"),))] == 1
    assert last[("traverse_fetch_seconds_count", ())] == last[ok] + 3
    # Politeness: each response's wait for its origin's turn (TRAVERSE_MIN_DELAY=0.1 from
    # the end of one request of an origin to the start of the next: the fast seed's 14
    # pages after its first waited at least that each), and the requests waiting now.
    waits = ("traverse_politeness_wait_seconds_count", ())
    assert last[waits] == last[("traverse_fetch_seconds_count", ())]
    assert last[("traverse_politeness_wait_seconds_sum", ())] >= 13 * 0.1
    assert last[("traverse_politeness_wait_seconds_bucket", (("le", "0.01"),))] < last[waits]
    assert ("traverse_politeness_waiting", ()) in last
    assert "process_cpu_seconds_total" in {name for name, _ in last}


def test_bound_to_loopback_by_default(server, tmp_path):
    server.site({"/": Reply(body="slow", delay=3.0)})
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
            *crawl_args(tmp_path, server.origin), "-s", f"TRAVERSE_METRICS_PORT={port}",
        ],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: scrape(port), "the metrics endpoint")
        listening = Path("/proc/net/tcp").read_text().splitlines()[1:]
        local = {
            fields[1] for fields in (line.split() for line in listening) if fields[3] == "0A"
        }  # 0A: LISTEN; "0100007F:PORT" is 127.0.0.1
        assert f"0100007F:{port:04X}" in local
        assert f"00000000:{port:04X}" not in local
        outcome = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, outcome[1][-3000:]


def test_a_busy_port_is_exit_2_naming_the_setting(server: Server, tmp_path):
    server.site({"/": "never fetched"})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        run = scrapy(
            *("crawl", "traverse", "-a", f"url={server.url('/')}"),
            *crawl_args(tmp_path, server.origin), "-s", f"TRAVERSE_METRICS_PORT={port}",
        )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "TRAVERSE_METRICS_PORT" in errors[0], run.stderr[-2000:]
    assert f"127.0.0.1:{port}" in errors[0]
    assert "Traceback" not in run.stderr
    assert server.paths() == []  # nothing was fetched
    assert time.monotonic() - started < 30


@pytest.mark.redis
def test_each_distributed_worker_serves_its_own_figures(server, redis_server, tmp_path):  # noqa: F811
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(40))
    server.site({"/": links, **{f"/p{i}": Reply(body=f"page {i}", delay=0.1) for i in range(40)}})
    ports = [free_port(), free_port()]

    def worker(port: int, *seeds: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                sys.executable, "-m", "scrapy", "crawl", "traverse", *seeds,
                *crawl_args(tmp_path, server.origin), "-s", "CONCURRENT_REQUESTS=2",
                "-s", f"REDIS_URL={redis_server.url}", "-s", "TRAVERSE_IDLE_TIMEOUT=20",
                "-s", f"TRAVERSE_METRICS_PORT={port}", "-s", "LOGSTATS_INTERVAL=0",
                "-s", "TRAVERSE_MAX_PAGES=41",
            ],
            cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip

    procs = [worker(ports[0], "-a", f"url={server.url('/')}", "-a", "source_id=shared")]
    procs.append(worker(ports[1]))
    seen: list[Samples] = [{}, {}]
    try:
        deadline = time.monotonic() + 60
        while any(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, "the workers did not finish"
            for k, port in enumerate(ports):
                samples = scrape(port)
                if samples:
                    seen[k] = samples
            time.sleep(0.05)
        results = [(p.returncode, p.communicate()[1]) for p in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for status, err in results:
        assert status == 0, err[-3000:]
    counted = [sum(pages(samples, "shared").values()) for samples in seen]
    # Each port answered with its own worker's pages: both worked, neither counts the other's.
    assert all(n > 0 for n in counted), counted
    assert sum(counted) <= 41
    committed = [
        int(m.group(1)) if (m := re.search(r"'distributed/committed': (\d+)", err)) else 0
        for _, err in results
    ]
    assert all(n <= c for n, c in zip(counted, committed, strict=True)), (counted, committed)
    manifest = json.loads(next((tmp_path / "manifests").glob("shared-*.json")).read_text())
    assert len(manifest["pages"]) == sum(committed) == 41
