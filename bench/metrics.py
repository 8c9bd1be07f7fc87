"""What the Prometheus endpoint costs a crawl: live runs with and without it, interleaved.

    .venv/bin/python bench/run.py metrics [--runs 5]

Each repetition runs a live crawl without ``TRAVERSE_METRICS_PORT`` and then one with it,
while a thread here scrapes ``/metrics`` every ``SCRAPE_EVERY`` seconds (far more often
than Prometheus's default 15 s, so the scrapes' own cost is in the figure), so that drift
in the machine's load hits both alike. The CPU per page (the crawl process's
``ru_utime + ru_stime``) of the two, as medians, must differ by at most ``TOLERANCE``.
"""

from __future__ import annotations

import os
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

TOLERANCE = 0.03  # counting may cost the crawl at most 3 % CPU per page
# Seconds between scrapes: 0.1 by default, several scrapes even in a short smoke run (the
# scrapes' own cost included); BENCH_METRICS_SCRAPE_EVERY=15 is Prometheus's default
# interval, where a 2,000-page crawl is scraped about once: the cost of counting alone.
SCRAPE_EVERY = float(os.environ.get("BENCH_METRICS_SCRAPE_EVERY", "0.1"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Scraper(threading.Thread):
    """Scrapes ``/metrics`` until stopped; counts the scrapes that answered."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.url = f"http://127.0.0.1:{port}/metrics"
        self.stopped = threading.Event()
        self.answered = 0

    def run(self) -> None:
        while not self.stopped.wait(SCRAPE_EVERY):
            try:
                with urllib.request.urlopen(self.url, timeout=5) as reply:
                    reply.read()
                self.answered += 1
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or already stopped


def run(bench: Any) -> dict[str, Any]:
    from bench import run as r  # the registry imports this module, not the other way

    args = bench.args
    pages = bench.site.pages
    print(f"\n== metrics: {pages} pages, {args.runs} runs each, scrape every {SCRAPE_EVERY} s ==")
    runs: dict[str, list[Any]] = {"without": [], "with": []}
    scrapes = []
    for i in range(args.warmup + args.runs):
        without = bench.traverse(f"metrics-off-{i}")
        port = _free_port()
        scraper = Scraper(port)
        scraper.start()
        try:
            with_metrics = bench.traverse(
                f"metrics-on-{i}", extra=[f"TRAVERSE_METRICS_PORT={port}"]
            )
        finally:
            scraper.stopped.set()
            scraper.join()
        for one in (without, with_metrics):
            bench.check(one, pages)
        if i >= args.warmup:
            runs["without"].append(without)
            runs["with"].append(with_metrics)
            scrapes.append(scraper.answered)
    off, on = r.summary(runs["without"]), r.summary(runs["with"])
    print(r.line("live, no metrics", off))
    print(r.line("live, metrics scraped", on))
    cpu = on["cpu_ms_per_page"] / off["cpu_ms_per_page"]
    speed = on["pages_per_s"] / off["pages_per_s"]
    ok = cpu <= 1 + TOLERANCE
    print(
        f"  metrics: CPU/page {cpu:.3f}x, pages/s {speed:.3f}x, scrapes answered {scrapes}  "
        f"{r.verdict(ok)}"
    )
    return {
        "without": off,
        "with": on,
        "scrapes_answered": scrapes,
        "cpu_per_page_ratio": round(cpu, 3),
        "pages_per_s_ratio": round(speed, 3),
        "within_tolerance": ok,
    }
