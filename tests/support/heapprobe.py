"""A Scrapy extension for the end-to-end tests of the process-wide extensions
(``traverse_crawl/runtime/process_wide.py``): what they changed.

Records, as JSON in ``HEAP_PROBE_OUT``, ``gc.get_freeze_count()``, the number
of objects in the oldest generation, the youngest generation's threshold and the
root logger's level when the first response reaches the engine (mid-crawl), and
the freeze count, the threshold and the root logger's level once the engine has
stopped (after every ``spider_closed`` handler).
"""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server


def probed_crawl(server: Server, tmp_path: Path, *extra: str) -> tuple[Any, dict[str, int]]:
    """``scrapy crawl traverse`` of ``server``'s index with this probe: the run and what it saw."""
    out = tmp_path / "probe.json"
    extensions: dict[str, int | None] = {"tests.support.heapprobe.HeapProbe": 0}
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/index.html')}",
        *crawl_args(tmp_path, server.origin),
        "-s", f"EXTENSIONS={json.dumps(extensions)}",
        "-s", f"HEAP_PROBE_OUT={out}",
        *extra,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return run, json.loads(out.read_text(encoding="utf-8"))


class HeapProbe:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: dict[str, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeapProbe:
        path = crawler.settings.get("HEAP_PROBE_OUT")
        if not path:
            raise NotConfigured
        probe = cls(path)
        crawler.signals.connect(probe.response, signal=signals.response_received)
        crawler.signals.connect(probe.stopped, signal=signals.engine_stopped)
        return probe

    def response(self, **_: Any) -> None:
        if "frozen" not in self.seen:
            self.seen["frozen"] = gc.get_freeze_count()
            self.seen["oldest"] = len(gc.get_objects(generation=2))
            self.seen["threshold"] = gc.get_threshold()[0]
            self.seen["root_level"] = logging.root.level

    def stopped(self) -> None:
        self.seen["frozen_after"] = gc.get_freeze_count()
        self.seen["threshold_after"] = gc.get_threshold()[0]
        self.seen["root_level_after"] = logging.root.level
        with open(self.path, "w", encoding="utf-8") as out:
            json.dump(self.seen, out)
