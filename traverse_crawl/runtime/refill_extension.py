"""A freed download place is refilled in the loop turn its response arrives.

On ``response_received`` (the request's download place is free) this runs the
engine's pass that takes the next request at once, when the scheduler holds one and
the engine would take it, instead of on the engine's next-turn timer. Off in
``replay``: no network wait to hide, and a pass per response would only cost CPU.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config

logger = logging.getLogger(__name__)


# Scrapy's engine takes the next request from the scheduler in a pass that it schedules
# with ``CallLaterOnce``: a ``callLater(0)`` timer, which asyncio runs on the loop's
# next turn, after every callback already queued; with a wave of responses in, after
# the page work of that wave. With 50 ms before every response and 16 in flight, that
# wait was a share of every cycle. The timer still fires, and finds nothing more to
# do. With nothing queued the pass would only look for the spider being idle, which is
# left to the engine's own timer. ``_start_scheduled_requests`` is private (Scrapy is
# pinned to 2.19.x): if a later Scrapy drops it, the extension says so once and stays
# out of the way.
class RefillAtResponse:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RefillAtResponse:
        if get_config(crawler).mode == "replay":
            # No reason given: Scrapy would print it at WARNING in every replay, and
            # nothing is wrong (no network wait to hide).
            raise NotConfigured
        extension = cls(crawler)
        crawler.signals.connect(extension.refill, signal=signals.response_received)
        return extension

    def refill(self, **_: Any) -> None:
        engine: Any = self.crawler.engine
        slot = getattr(engine, "_slot", None)
        if slot is None or not slot.scheduler.has_pending_requests() or engine.needs_backout():
            return
        start = getattr(engine, "_start_scheduled_requests", None)
        if start is None:  # not this Scrapy: the engine's own timer refills, as before
            logger.warning("this Scrapy's engine has no _start_scheduled_requests; not refilling")
            self.crawler.signals.disconnect(self.refill, signal=signals.response_received)
            return
        start()
