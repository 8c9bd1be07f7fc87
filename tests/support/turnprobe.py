"""A Scrapy extension for ``tests/e2e/test_freed_place_refilled_at_once.py``: in which
turn of the event loop each response reached the engine and each request reached the
downloader.

A callback that reschedules itself with ``call_soon`` runs once per loop turn and
counts them (the loop spins meanwhile: only for these short test crawls). The
turn numbers go, as JSON, to ``TURN_PROBE_OUT`` when the spider closes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server


def turns_to_refill(
    server: Server, tmp_path: Path, *extra: str, refill: bool = True
) -> tuple[list[int], str]:
    """Crawl ``server``'s index one request at a time: for each response that was followed by
    a request reaching the downloader, the loop turns in between; and the crawl's log."""
    out = tmp_path / "turns.json"
    extensions: dict[str, int | None] = {"tests.support.turnprobe.TurnProbe": -100}
    if not refill:
        extensions["traverse_crawl.runtime.refill_extension.RefillAtResponse"] = None
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/index.html')}",
        *crawl_args(tmp_path, server.origin),
        "-s", "CONCURRENT_REQUESTS=1",
        "-s", f"EXTENSIONS={json.dumps(extensions)}",
        "-s", f"TURN_PROBE_OUT={out}",
        *extra,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(out.read_text(encoding="utf-8"))
    gaps = []
    for response in seen["responses"]:
        later = [turn - response for turn in seen["reached"] if turn >= response]
        if later:
            gaps.append(min(later))
    return gaps, run.stderr


class TurnProbe:
    def __init__(self, path: str) -> None:
        self.path = path
        self.turn = 0
        self.ticking = False
        self.responses: list[int] = []
        self.reached: list[int] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TurnProbe:
        path = crawler.settings.get("TURN_PROBE_OUT")
        if not path:
            raise NotConfigured
        probe = cls(path)
        crawler.signals.connect(probe.on_opened, signal=signals.spider_opened)
        crawler.signals.connect(probe.on_response, signal=signals.response_received)
        crawler.signals.connect(probe.on_reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(probe.on_closed, signal=signals.spider_closed)
        return probe

    def on_opened(self, **_: Any) -> None:
        self.ticking = True
        asyncio.get_event_loop().call_soon(self.tick)

    def tick(self) -> None:
        self.turn += 1
        if self.ticking:
            asyncio.get_event_loop().call_soon(self.tick)

    def on_response(self, **_: Any) -> None:
        self.responses.append(self.turn)

    def on_reached(self, **_: Any) -> None:
        self.reached.append(self.turn)

    def on_closed(self, **_: Any) -> None:
        self.ticking = False
        with open(self.path, "w", encoding="utf-8") as out:
            json.dump({"responses": self.responses, "reached": self.reached}, out)
