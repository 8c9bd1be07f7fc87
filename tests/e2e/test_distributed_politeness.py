"""Politeness across the worker processes of one distributed crawl.

Three ``scrapy crawl`` workers share a real redis-server and crawl loopback
sites; the servers' request logs (server-side start and end times) show what
the sites saw, whichever worker sent each request.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.cli import REPO, crawl_args, scrapy_env
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.server import Handler, Hit, Reply, Server, serve

pytestmark = pytest.mark.redis

DELAY = 0.2
# The server stamps a request's end when its handler thread has written the
# response, which on a loaded machine can come a little after the worker has
# it: gaps are asserted at 90% of the delay, as in the single-process tests.
SLACK = 0.1
PAGES = 8
CRAWL_ID = "polite"


@pytest.fixture
def server3() -> Iterator[Server]:
    yield from serve()


def site(server: Server) -> None:
    links = "".join(f'<a href="/p{n}">{n}</a>' for n in range(1, PAGES))
    server.site({"/": f"<html><body>{links}</body></html>"})
    server.site({f"/p{n}": f"<p>page {n}</p>" for n in range(1, PAGES)})
    robots = Reply(body="User-agent: *\nAllow: /\n", content_type="text/plain")
    server.routes["/robots.txt"] = robots


def first_time(server: Server, path: str, first: Reply, then: Reply) -> None:
    """``path`` answers ``first`` to its first request, ``then`` afterwards."""

    def route(handler: Handler) -> Reply:
        return first if server.started.count(path) == 1 else then

    server.routes[path] = route


def workers(
    redis_url: str, servers: list[Server], tmp_path: Path, *extra: str, n: int = 3
) -> list[subprocess.Popen[str]]:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(s.url("/") + "\n" for s in servers), encoding="utf-8")
    args = [
        sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={seeds}",
        *crawl_args(tmp_path, *(s.origin for s in servers)),
        "-s", f"TRAVERSE_MIN_DELAY={DELAY}", "-s", f"REDIS_URL={redis_url}",
        "-s", f"TRAVERSE_CRAWL_ID={CRAWL_ID}", "-s", "TRAVERSE_MODE=live", *extra,
    ]  # fmt: skip
    procs = []
    for i in range(n):
        log = open(tmp_path / f"worker{i}.log", "w", encoding="utf-8")
        procs.append(
            subprocess.Popen(args, cwd=REPO, env=scrapy_env(), stdout=log, stderr=log, text=True)
        )
        log.close()
    return procs


def finish(procs: list[subprocess.Popen[str]], tmp_path: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    try:
        for i, proc in enumerate(procs):
            code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if code not in (0, -signal.SIGKILL):
                log = (tmp_path / f"worker{i}.log").read_text(encoding="utf-8")
                pytest.fail(f"worker {i} exited {code}:\n{log[-3000:]}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def stat(tmp_path: Path, key: str, n: int = 3) -> int:
    """``key`` summed over the workers' final stats dumps (their logs)."""
    found = 0
    for i in range(n):
        log = (tmp_path / f"worker{i}.log").read_text(encoding="utf-8")
        found += sum(int(v) for v in re.findall(rf"'{re.escape(key)}': (\d+)", log))
    return found


def pages(server: Server) -> list[Hit]:
    """The page requests the server saw (robots.txt aside), in order of arrival."""
    with server.lock:
        return sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)


def assert_polite(server: Server) -> None:
    """One request at a time, and at least DELAY from each end to the next start."""
    hits = pages(server)
    gaps = [(b.start - a.end, a.path, b.path) for a, b in itertools.pairwise(hits)]
    too_short = [gap for gap in gaps if gap[0] < DELAY * (1 - SLACK)]
    assert not too_short, f"{server.origin}: end-to-start gaps under {DELAY} s: {too_short}"


def test_three_workers_share_one_ledger_per_origin_and_one_robots_txt(
    redis_server: RedisServer,  # noqa: F811
    server: Server,
    server2: Server,
    server3: Server,
    tmp_path: Path,
) -> None:
    servers = [server, server2, server3]
    for s in servers:
        site(s)
    # A 429 whose Retry-After holds back every worker, not only the one that got it.
    first_time(
        server2,
        "/p3",
        Reply(429, "busy", headers={"Retry-After": "1"}, content_type="text/plain"),
        Reply(body="<p>page 3</p>"),
    )
    # A download twice as long as the lease: its worker renews its hold.
    lease = 1.2
    first_time(server3, "/p5", Reply(body="<p>slow</p>", delay=2 * lease), Reply(body="<p>5</p>"))
    extra = ("-s", f"TRAVERSE_LEASE_TIMEOUT={lease}")
    finish(workers(redis_server.url, servers, tmp_path, *extra), tmp_path)
    for s in servers:
        assert s.count("/robots.txt") == 1, s.paths()
        assert {h.path for h in pages(s)} == {"/", *(f"/p{n}" for n in range(1, PAGES))}
        assert_polite(s)
    # Every page request was cleared by the ledger; robots.txt fetched once per origin.
    assert stat(tmp_path, "ledger/acquired") == sum(len(pages(s)) for s in servers)
    assert stat(tmp_path, "robots/fetched") == 3
    busy = next(h for h in pages(server2) if h.path == "/p3")
    later = [h for h in pages(server2) if h.start > busy.start]
    assert later
    assert min(h.start for h in later) >= busy.end + 1.0 * (1 - SLACK)


def test_an_origin_held_by_a_killed_worker_comes_back_after_its_lease(
    redis_server: RedisServer,  # noqa: F811
    server: Server,
    tmp_path: Path,
) -> None:
    lease = 2.0
    site(server)
    # The first request of /p1 is slow: its worker is killed while it holds the origin.
    first_time(server, "/p1", Reply(body="<p>slow</p>", delay=1.5), Reply(body="<p>page 1</p>"))
    procs = workers(redis_server.url, [server], tmp_path, "-s", f"TRAVERSE_LEASE_TIMEOUT={lease}")
    conn = redis.Redis.from_url(redis_server.url, decode_responses=True)
    try:
        deadline = time.monotonic() + 60
        while "/p1" not in server.started:
            assert time.monotonic() < deadline, "no worker requested /p1"
            time.sleep(0.01)
        key = f"traverse:{CRAWL_ID}:ledger:{server.origin}"
        holder, expiry = conn.hmget(key, "holder", "lease")
        seconds, micros = conn.time()
        now = time.monotonic()
        assert holder is not None and expiry is not None
        pid = int(holder.split(":")[1])
        victim = next(p for p in procs if p.pid == pid)
        os.kill(pid, signal.SIGKILL)
        # The lease's expiry on the servers' clock.
        expires = now + int(expiry) / 1e6 - (seconds + micros / 1e6)
    finally:
        conn.close()
    finish(procs, tmp_path)
    assert victim.returncode == -signal.SIGKILL
    slow = next(h for h in pages(server) if h.path == "/p1")
    after = [h for h in pages(server) if h.start > slow.start]
    assert after, "the other workers never came back to the origin"
    assert after[0].start >= expires + DELAY * (1 - SLACK)
