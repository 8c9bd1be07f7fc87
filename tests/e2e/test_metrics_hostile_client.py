"""A ``/metrics`` client that pipelines requests and never reads its answers costs the
crawl nothing it would notice: pages keep reaching the site at the crawl's own pace and
the crawl's memory stays where it was (docs/monitoring.md, "Scraping the metrics")."""

from __future__ import annotations

import itertools
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.e2e.test_metrics import free_port, scrape
from tests.support.cli import REPO, crawl_args, scrapy_env, wait_for
from tests.support.server import Reply, Server

PAGES = 60
DELAY = 0.2  # TRAVERSE_MIN_DELAY: the crawl's pace, one page every DELAY seconds or so
HOSTILE_SECONDS = 6.0
REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def pipeline_and_never_read(port: int, stop: threading.Event, sent: list[int]) -> None:
    """Write pipelined ``GET /metrics`` as fast as the crawl takes them; read nothing."""
    burst = REQUEST * 2000
    connections: list[socket.socket] = []
    while not stop.is_set():
        try:
            client = socket.create_connection(("127.0.0.1", port), timeout=1)
        except OSError:
            time.sleep(0.05)
            continue
        connections.append(client)
        client.setblocking(False)
        while not stop.is_set():
            try:
                sent[0] += client.send(burst)
            except BlockingIOError:
                time.sleep(0.01)  # the crawl reads no more: stay connected, keep trying
            except OSError:
                break  # dropped by the crawl: come back on a new connection
    for client in connections:
        client.close()


def test_a_client_that_pipelines_and_never_reads_does_not_slow_the_crawl(
    server: Server, tmp_path: Path
):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(PAGES))
    server.site({"/": links, **{f"/p{i}": Reply(body=f"page {i}") for i in range(PAGES)}})
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
            *crawl_args(tmp_path, server.origin), "-s", f"TRAVERSE_MIN_DELAY={DELAY}",
            "-s", f"TRAVERSE_METRICS_PORT={port}", "-s", "LOGSTATS_INTERVAL=0",
            "-s", f"TRAVERSE_MAX_PAGES={PAGES + 1}",
        ],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    stop = threading.Event()
    sent = [0]
    hostile = threading.Thread(target=pipeline_and_never_read, args=(port, stop, sent))
    peak = 0
    try:
        wait_for(lambda: scrape(port) and server.count("/p0") + server.count("/p1"), "the crawl")
        before = rss_kib(proc.pid)
        began = time.monotonic()
        hostile.start()
        honest: list[bool] = []
        while time.monotonic() - began < HOSTILE_SECONDS:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            peak = max(peak, rss_kib(proc.pid))
            if not honest and time.monotonic() - began > HOSTILE_SECONDS / 2:
                # An honest scrape is still answered while the hostile client pipelines.
                honest.append(bool(scrape(port)))
            time.sleep(0.05)
        ended = time.monotonic()
        stop.set()
        hostile.join(timeout=10)
        outcome = proc.communicate(timeout=120)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, outcome[1][-3000:]
    assert sent[0] > 100 * len(REQUEST), "the hostile client sent next to nothing"
    assert honest == [True], "an honest scrape went unanswered"

    with server.lock:
        starts = sorted(hit.start for hit in server.hits if hit.path.startswith("/p"))
    during = [t for t in starts if began <= t <= ended]
    # At the crawl's pace (one page per DELAY, a little more on a loaded machine) the
    # hostile seconds see many pages, and no gap between two of them is long.
    assert len(during) >= HOSTILE_SECONDS / DELAY / 3, (len(during), sent[0])
    edges = [began, *during, ended]
    longest = max(b - a for a, b in itertools.pairwise(edges))
    assert longest < 2.0, f"no page reached the site for {longest:.1f} s"
    grown = (peak - before) / 1024
    assert grown < 64, f"the crawl grew by {grown:.0f} MiB while the client pipelined"


def test_a_client_that_says_nothing_is_dropped(server: Server, tmp_path: Path):
    server.site({"/": Reply(body="slow", delay=20.0)})  # the crawl outlives the client
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
            *crawl_args(tmp_path, server.origin), "-s", f"TRAVERSE_METRICS_PORT={port}",
            "-s", "DOWNLOAD_TIMEOUT=30",
        ],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: scrape(port), "the metrics endpoint")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as idle:
            idle.sendall(b"GET /metr")  # a request that never ends
            opened = time.monotonic()
            try:
                while idle.recv(4096):
                    pass
            except (ConnectionResetError, TimeoutError):
                pass
            held = time.monotonic() - opened
        assert proc.poll() is None, "the crawl ended before the client was dropped"
    finally:
        proc.kill()
        proc.communicate()
    assert held < 15, f"a silent client was held {held:.1f} s"
