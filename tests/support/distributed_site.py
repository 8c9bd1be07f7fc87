"""A loopback site over several origins, and worker processes of a distributed crawl."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.cli import REPO, scrapy_env
from tests.support.jobdir_helpers import comparable, long_site, page_hits, stop
from tests.support.server import Server, run

ORIGINS = 4
SECTIONS = 6
PER_SECTION = 15
PER_ORIGIN = 1 + SECTIONS + SECTIONS * PER_SECTION  # 97 pages at depths 0-2
MAX_PAGES = 90  # < PER_ORIGIN: every seed is truncated, so the budget is exercised


def build(server: Server) -> None:
    """The JOBDIR tests' BFS tree, smaller: cross links (duplicates the frontier drops),
    pages past the depth limit."""
    long_site(server, sections=SECTIONS, per_section=PER_SECTION)


@pytest.fixture(scope="module")
def site_servers() -> Iterator[list[Server]]:
    gens = [run(Server()) for _ in range(ORIGINS)]
    servers = [next(gen) for gen in gens]
    for server in servers:
        build(server)
    try:
        yield servers
    finally:
        for gen in gens:
            gen.close()


@pytest.fixture(scope="module")
def expected(site_servers: list[Server], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The single-process crawl's manifests, once per module."""
    return reference(tmp_path_factory.mktemp("reference"), site_servers)


@pytest.fixture
def sites(site_servers: list[Server], expected: Any) -> list[Server]:
    """The site, its request logs cleared (after the reference crawl)."""
    clear(site_servers)
    return site_servers


def clear(servers: list[Server]) -> None:
    for server in servers:
        with server.lock:
            server.hits.clear()
            server.started.clear()


def seeds_file(tmp: Path, servers: list[Server]) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "seeds.txt"
    path.write_text("".join(f"site{i}\t{s.url('/')}\n" for i, s in enumerate(servers)))
    return path


def command(
    tmp: Path, servers: list[Server], redis_url: str | None, *extra: str, seeds: bool = True
) -> list[str]:
    args = [sys.executable, "-m", "scrapy", "crawl", "traverse"]
    if seeds:
        args += ["-a", f"seeds={seeds_file(tmp, servers)}"]
    args += [
        "-s", f"TRAVERSE_EGRESS_ALLOW={','.join(s.origin for s in servers)}",
        "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_MAX_PAGES={MAX_PAGES}",
        "-s", "TRAVERSE_MAX_DEPTH=2",
        "-s", f"TRAVERSE_STORE={tmp / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp / 'manifests'}",
        "-s", "CONCURRENT_REQUESTS=8",
        "-s", "LOGSTATS_INTERVAL=0",
        "-s", "TRAVERSE_LEASE_TIMEOUT=2",
        "-s", "TRAVERSE_IDLE_TIMEOUT=20",
    ]  # fmt: skip
    if redis_url:
        args += ["-s", f"REDIS_URL={redis_url}"]
    return [*args, *extra]


def start(cmd: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        cmd, cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def finish(procs: list[subprocess.Popen[str]], timeout: float = 180) -> list[tuple[int, str]]:
    """Wait for every worker; (exit status, stderr) of each."""
    out = []
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for left in procs[len(out) :]:  # every worker left: none outlives the test
                stop(left, signal.SIGKILL)
            raise
        out.append((proc.returncode, err))
    return out


def manifests(tmp: Path) -> dict[str, Any]:
    found = {}
    for path in sorted((tmp / "manifests").glob("*.json")):
        found[path.name] = comparable(json.loads(path.read_text(encoding="utf-8")))
    return found


def reference(tmp: Path, servers: list[Server]) -> dict[str, Any]:
    """The single-process crawl's manifests; the servers' logs are cleared after it."""
    done = subprocess.run(
        command(tmp / "reference", servers, None), cwd=REPO, env=scrapy_env(),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    expected = manifests(tmp / "reference")
    assert len(expected) == ORIGINS
    clear(servers)
    return expected


def hits(servers: list[Server]) -> int:
    return sum(len(page_hits(s)) for s in servers)


def wait_for_hits(servers: list[Server], count: int, procs: list[Any]) -> None:
    deadline = time.monotonic() + 120
    while hits(servers) < count and any(p.poll() is None for p in procs):
        assert time.monotonic() < deadline, "the crawl never got going"
        time.sleep(0.005)


def wait_for_worker(
    redis_url: str, proc: subprocess.Popen[str], crawl_id: str = "traverse"
) -> None:
    """Until ``proc`` has asked the crawl for tasks (its name, with its pid, is among the
    crawl's workers): a worker slow to start may otherwise join after the others finished."""
    conn = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        deadline = time.monotonic() + 120
        while not any(
            f":{proc.pid}:" in name for name in conn.zrange(f"traverse:{crawl_id}:workers", 0, -1)
        ):
            assert proc.poll() is None, "the worker ended before it asked for a task"
            assert time.monotonic() < deadline, "the worker never asked for a task"
            time.sleep(0.005)
    finally:
        conn.close()
