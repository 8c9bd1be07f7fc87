"""Requests freed by a wave of responses go out before that wave's page work.

With every response late, the pages of a crawl come back in waves of
``CONCURRENT_REQUESTS``. The requests that take their places must reach the
server while the wave's pages are still being processed (decoded, hashed,
parsed): if they waited for the whole wave's work, every wave would add that
work to the latency, and the crawl would fall short of ``pages * delay /
concurrency``. Observed from both ends: the server's arrival times, and each
page's ``fetchedAt``, which the crawler stamps during that page's work.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Handler, Reply, Server

CONCURRENCY = 16
CHILDREN = 3 * CONCURRENCY
DELAY = 0.1
# About 190,000 characters: a few milliseconds of decoding, hashing and parsing.
FILLER = "<p>" + "lorem ipsum dolor sit amet " * 7000 + "</p>"


def _site(server: Server, arrivals: list[tuple[str, float]]) -> None:
    links = "".join(f'<a href="/c{i}.html">c{i}</a>' for i in range(1, CHILDREN + 1))
    pages = {"/index.html": f"<html><body>{links}</body></html>"}
    pages |= {f"/c{i}.html": f"<html><body>{FILLER}</body></html>" for i in range(1, CHILDREN + 1)}

    def route(body: str) -> Any:
        def reply(handler: Handler) -> Reply:
            arrivals.append((handler.path, time.time()))
            return Reply(body=body, delay=DELAY)

        return reply

    for path, body in pages.items():
        server.routes[path] = route(body)


def test_freed_requests_are_sent_before_the_waves_page_work(server, tmp_path):
    arrivals: list[tuple[str, float]] = []
    _site(server, arrivals)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/index.html')}",
        *crawl_args(tmp_path, server.origin),
        "-s", f"CONCURRENT_REQUESTS={CONCURRENCY}",
        "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={CONCURRENCY}",
        "-s", f"TRAVERSE_MAX_PAGES={CHILDREN + 1}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    (manifest_file,) = (tmp_path / "manifests").glob("*.json")
    pages = json.loads(manifest_file.read_text(encoding="utf-8"))["pages"]
    assert len(pages) == CHILDREN + 1
    assert all("snapshot" in page["fetch"] for page in pages)
    fetched = {
        page["url"]: datetime.fromisoformat(page["fetch"]["snapshot"]["fetchedAt"]).timestamp()
        for page in pages
    }
    children = [(path, at) for path, at in arrivals if path != "/index.html"]
    assert len(children) == CHILDREN
    # The k-th page of the first wave to be processed freed a place for the
    # k-th request of the second wave: that request must reach the server
    # before the page's work starts (``fetchedAt`` is stamped as it starts,
    # truncated to the millisecond, hence the 1 ms).
    work = sorted(fetched[server.url(path)] for path, _ in children[:CONCURRENCY])
    sent = sorted(at for _, at in children[CONCURRENCY : 2 * CONCURRENCY])
    early = sum(at < started + 0.001 for at, started in zip(sent, work, strict=True))
    # Before the change 0-4 of 16 were; after it 15-16 on a quiet machine. Half leaves room
    # for the server threads of this loaded test process waking late.
    assert early >= CONCURRENCY // 2, (early, sent, work)
