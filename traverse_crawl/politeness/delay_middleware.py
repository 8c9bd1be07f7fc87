"""Per-origin politeness through Scrapy's download slots.

Every request goes to the download slot of its origin (``download_slot``, set here
whatever a spider named): a ``DelaySlot``, or with ``REDIS_URL`` a ``LedgerSlot`` that
waits for the crawl's per-origin ledger in Redis. Waiting happens in the slot's queue, not here
(docs/architecture.md, "Politeness, concretely").
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.stop import CrawlStopped, stopping
from traverse_crawl.fetch import urls
from traverse_crawl.meta_keys import BACKOFF, NOT_BEFORE, ORIGIN_DELAY, ROBOTS
from traverse_crawl.politeness.delay_slot import DelaySlot
from traverse_crawl.politeness.shared import shared_politeness
from traverse_crawl.stats import inc


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it
        self.min_delay = config.min_delay
        self.per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
        self.shared = shared_politeness(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if stopping(self.crawler) and not request.meta.get(ROBOTS):
            # SIGINT/SIGTERM: nothing new starts (crawl/stop.py).
            raise CrawlStopped(f"crawl stopped before {request.url} was sent")
        meta = request.meta
        # A retry waits its backoff (``traverse_backoff``, from the retry middleware)
        # instead of the delay; robots.txt requests get a slot of their own that
        # neither waits nor counts; an honoured Crawl-delay raises the origin's delay.
        backoff = meta.pop(BACKOFF, None)
        if backoff is not None:
            meta[NOT_BEFORE] = monotonic() + backoff
        # The slot is always the origin's, whatever ``download_slot`` a spider put in
        # the request's meta: a slot of its own would escape the origin's delay and
        # its one-at-a-time rule. Only robots.txt requests have a slot apart.
        origin = urls.origin(request.url)
        key = meta["download_slot"] = "robots " + origin if meta.get(ROBOTS) else origin
        slots = self.crawler.engine.downloader.slots
        slot = slots.get(key)
        if slot is None:
            delay = 0.0 if meta.get(ROBOTS) else self._delay(meta)
            concurrency = 1 if delay else self.per_domain
            if self.shared is None or meta.get(ROBOTS):
                slots[key] = DelaySlot(concurrency, delay)
            else:
                slots[key] = self.shared.origin_slot(concurrency, delay, origin)
            if not meta.get(ROBOTS):
                inc(self.crawler.stats, "politeness/origins")
        elif isinstance(slot, DelaySlot) and ORIGIN_DELAY in meta:
            slot.delay = self._delay(meta)
            if slot.delay > 0:
                slot.concurrency = 1

    def _delay(self, meta: dict[str, Any]) -> float:
        """The origin's delay: the minimum, or a longer honoured Crawl-delay."""
        return max(self.min_delay, float(meta.get(ORIGIN_DELAY, 0.0)))
