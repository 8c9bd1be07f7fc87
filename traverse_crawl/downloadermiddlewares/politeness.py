"""Per-origin politeness through Scrapy's download slots (SPEC §6, CONTRACT §2).

Every request goes to the download slot of its origin (``download_slot``). While
``TRAVERSE_MIN_DELAY > 0`` such a slot lets one request at a time through, and
the next starts at least ``TRAVERSE_MIN_DELAY`` after the previous one *ended*
(Scrapy's own slot delay counts from the previous *start*). Waiting happens in
the slot's queue, not in a middleware, and the scheduler's
``DownloaderAwarePriorityQueue`` keeps one busy origin from starving the others.

Exceptions: a retry right after its own failed attempt goes without the delay
(it waited its backoff, SPEC §6); robots.txt requests use a slot of their own
and neither wait nor count. A robots ``Crawl-delay`` honoured by the robots
middleware (``traverse_origin_delay``) raises the origin's delay.

Meta keys: ``download_slot`` (Scrapy's), ``traverse_attempt`` (a token per
attempt, set here), ``traverse_retry_of``, ``traverse_origin_delay``.
Stats: ``politeness/origins``.
"""

from __future__ import annotations

import itertools
from time import monotonic
from typing import Any

from scrapy import Request
from scrapy.core.downloader import Slot
from scrapy.crawler import Crawler

from traverse_crawl.config import get_config
from traverse_crawl.core import urls


class _EndStamps(set[Request]):
    """The slot's ``transferring`` set: records when and which request ended.

    Scrapy's downloader removes a request from ``transferring`` and then looks
    at its queue, before any signal fires; this is the one place that sees the
    end of every download in time.
    """

    def __init__(self, slot: PoliteSlot) -> None:
        super().__init__()
        self.slot = slot

    def remove(self, request: Request) -> None:
        super().remove(request)
        self.slot.last_end = monotonic()
        self.slot.last_attempt = request.meta.get("traverse_attempt")


class PoliteSlot(Slot):
    """A download slot whose delay runs from the end of the previous request."""

    def __init__(self, concurrency: int, delay: float) -> None:
        super().__init__(concurrency, delay, jitter=0.0)
        self.transferring = _EndStamps(self)
        self.last_end = 0.0
        self.last_attempt: Any = None

    def download_delay(self) -> float:
        # The downloader waits ``returned - now + lastseen``: return the value that
        # makes that wait ``delay - (now - last_end)``.
        if not self.delay or not self.last_end:
            return 0.0
        if self.queue:
            head = self.queue[0][0]
            retry_of = head.meta.get("traverse_retry_of")
            if retry_of is not None and retry_of == self.last_attempt:
                return 0.0
        return max(0.0, self.delay + self.last_end - self.lastseen)


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.min_delay = get_config(crawler).min_delay
        per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
        self.concurrency = 1 if self.min_delay > 0 else per_domain
        self.tokens = itertools.count(1)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        meta = request.meta
        meta["traverse_attempt"] = next(self.tokens)
        key = meta.get("download_slot")
        if key is None:
            key = meta["download_slot"] = urls.origin(request.url)
        engine = self.crawler.engine
        if engine is None:
            return
        slots = engine.downloader.slots
        slot = slots.get(key)
        if slot is None:
            delay = 0.0 if meta.get("traverse_robots") else self.min_delay
            slots[key] = PoliteSlot(self.concurrency if delay else self._unpoliced(), delay)
            if self.crawler.stats is not None and not meta.get("traverse_robots"):
                self.crawler.stats.inc_value("politeness/origins")
        elif isinstance(slot, PoliteSlot) and "traverse_origin_delay" in meta:
            slot.delay = max(self.min_delay, float(meta["traverse_origin_delay"]))
            if slot.delay > 0:
                slot.concurrency = 1

    def _unpoliced(self) -> int:
        return self.crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
