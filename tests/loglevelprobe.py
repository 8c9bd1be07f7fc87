"""A Scrapy extension for ``tests/test_loglevel.py``: the root logger's level.

Records, as JSON in ``LOGLEVEL_PROBE_OUT``, the root logger's level when the first
response reaches the engine (mid-crawl) and once the engine has stopped (after
every ``spider_closed`` handler).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


class RootLevelProbe:
    def __init__(self, path: str) -> None:
        self.path = path
        self.seen: dict[str, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RootLevelProbe:
        path = crawler.settings.get("LOGLEVEL_PROBE_OUT")
        if not path:
            raise NotConfigured
        probe = cls(path)
        crawler.signals.connect(probe.response, signal=signals.response_received)
        crawler.signals.connect(probe.stopped, signal=signals.engine_stopped)
        return probe

    def response(self, **_: Any) -> None:
        self.seen.setdefault("during", logging.root.level)

    def stopped(self) -> None:
        self.seen["after"] = logging.root.level
        with open(self.path, "w", encoding="utf-8") as out:
            json.dump(self.seen, out)
