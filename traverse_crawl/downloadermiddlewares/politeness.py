"""Per-origin politeness through Scrapy's download slots (SPEC §6, CONTRACT §2).

Every request goes to the download slot of its origin (``download_slot``). While
``TRAVERSE_MIN_DELAY > 0`` such a slot lets one request at a time through, and
the next starts at least ``TRAVERSE_MIN_DELAY`` after the previous one *ended*
(Scrapy's own slot delay counts from the previous *start*). Waiting happens in
the slot's queue, not in a middleware, and the scheduler's
``DownloaderAwarePriorityQueue`` keeps one busy origin from starving the others.

Retries: a retry goes to the head of its origin's queue and waits its backoff
(``traverse_backoff``, from the retry middleware) instead of the delay (SPEC §6);
no other request to the origin starts meanwhile. robots.txt requests use a slot
of their own and neither wait nor count. A robots ``Crawl-delay`` honoured by the robots
middleware (``traverse_origin_delay``) raises the origin's delay.

Meta keys: ``download_slot`` (Scrapy's), ``traverse_backoff`` (seconds),
``traverse_not_before`` (set here from it), ``traverse_origin_delay``.
Stats: ``politeness/origins``.
"""

from __future__ import annotations

from collections import deque
from time import monotonic
from typing import Any

from scrapy import Request
from scrapy.core.downloader import Slot
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.core import urls
from traverse_crawl.core.attempt import BACKOFF, NOT_BEFORE, ORIGIN_DELAY
from traverse_crawl.core.config import get_config
from traverse_crawl.shutdown import CrawlStopped, stopping
from traverse_crawl.stats import inc

_EPSILON = 1e-6


class _EndStamps(set[Request]):
    """The slot's ``transferring`` set: records when the last download ended.

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


class _RetriesFirst(deque[tuple[Request, Any]]):
    """The slot's queue: a retry goes to the head, as in Traverse's sequential
    loop, where a page's retries come before any other request to its origin."""

    def __init__(self, slot: PoliteSlot) -> None:
        super().__init__()
        self.slot = slot

    def append(self, item: tuple[Request, Any]) -> None:
        if item[0].meta.get(NOT_BEFORE) is None:
            super().append(item)
            return
        self.appendleft(item)
        # A wait computed for the previous head no longer applies; the
        # downloader re-evaluates the queue right after this append.
        if self.slot.latercall is not None:
            self.slot.latercall.cancel()
            self.slot.latercall = None


class PoliteSlot(Slot):
    """A download slot whose delay runs from the end of the previous request,
    and whose retries wait their backoff instead of the delay."""

    def __init__(self, concurrency: int, delay: float) -> None:
        super().__init__(concurrency, delay, jitter=0.0)
        self.transferring = _EndStamps(self)
        self.queue = _RetriesFirst(self)
        # None until a download ends. Not 0.0: the downloader compares these
        # stamps with time.monotonic(), whose zero is the machine's boot, so a
        # 0.0 would delay the first request of a freshly booted container.
        self.last_end: float | None = None

    def download_delay(self) -> float:
        # The downloader waits ``returned - now + lastseen`` before it dispatches
        # the queue's head, and sets ``lastseen`` at each dispatch. A positive
        # value also makes it dispatch one request per call.
        not_before: float | None = None
        if self.queue:
            not_before = self.queue[0][0].meta.get(NOT_BEFORE)
        if not self.delay:
            return 0.0 if not_before is None else max(_EPSILON, not_before - self.lastseen)
        if self.last_end is None:
            # The origin's first request goes at once (the downloader waits
            # ``_EPSILON - now + 0``); once it is dispatched (``lastseen`` set),
            # the next one waits for its end.
            return self.delay if self.lastseen else _EPSILON
        if self.lastseen > self.last_end:
            # A request was dispatched since the last one ended: it is in flight
            # (it enters ``transferring`` a loop iteration later). Wait for its end.
            return self.delay
        if not_before is not None:
            return max(_EPSILON, not_before - self.lastseen)  # backoff, not delay (SPEC §6)
        return max(_EPSILON, self.delay + self.last_end - self.lastseen)


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it (issue 17)
        self.min_delay = config.min_delay
        self.per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if stopping(self.crawler) and not request.meta.get("traverse_robots"):
            # SIGINT/SIGTERM: nothing new starts (shutdown.py).
            raise CrawlStopped(f"crawl stopped before {request.url} was sent")
        meta = request.meta
        backoff = meta.pop(BACKOFF, None)
        if backoff is not None:
            meta[NOT_BEFORE] = monotonic() + backoff
        key = meta.get("download_slot")
        if key is None:
            key = meta["download_slot"] = urls.origin(request.url)
        slots = self.crawler.engine.downloader.slots
        slot = slots.get(key)
        if slot is None:
            delay = 0.0 if meta.get("traverse_robots") else self._delay(meta)
            slots[key] = PoliteSlot(1 if delay else self.per_domain, delay)
            if not meta.get("traverse_robots"):
                inc(self.crawler.stats, "politeness/origins")
        elif isinstance(slot, PoliteSlot) and ORIGIN_DELAY in meta:
            slot.delay = self._delay(meta)
            if slot.delay > 0:
                slot.concurrency = 1

    def _delay(self, meta: dict[str, Any]) -> float:
        """The origin's delay: the minimum, or a longer honoured Crawl-delay."""
        return max(self.min_delay, float(meta.get(ORIGIN_DELAY, 0.0)))
