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

Distributed crawls (``REDIS_URL``): each origin's slot is a ``LedgerSlot``
(``distributed/ledger_slot.py``), whose head waits for the crawl's per-origin
ledger in Redis, so the one-at-a-time rule and the end-to-start delay hold
across all workers, on Redis's clock.

Meta keys: ``download_slot`` (Scrapy's), ``traverse_backoff`` (seconds),
``traverse_not_before`` (set here from it), ``traverse_origin_delay``.
Stats: ``politeness/origins``; distributed: ``ledger/acquired``, ``ledger/waited``,
``ledger/lease_expired``, ``ledger/errors``, ``ledger/unsent``.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.stop import CrawlStopped, stopping
from traverse_crawl.distributed.ledger_slot import LedgerSlot
from traverse_crawl.distributed.shared_politeness import shared_politeness
from traverse_crawl.fetch import urls
from traverse_crawl.meta_keys import BACKOFF, NOT_BEFORE, ORIGIN_DELAY, ROBOTS
from traverse_crawl.politeness.delay_slot import PoliteSlot
from traverse_crawl.stats import inc


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it (issue 17)
        self.min_delay = config.min_delay
        self.per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
        shared = shared_politeness(crawler)
        self.ledger = None if shared is None else shared.ledger

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if stopping(self.crawler) and not request.meta.get(ROBOTS):
            # SIGINT/SIGTERM: nothing new starts (crawl/stop.py).
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
            delay = 0.0 if meta.get(ROBOTS) else self._delay(meta)
            concurrency = 1 if delay else self.per_domain
            if self.ledger is None or meta.get(ROBOTS):
                slots[key] = PoliteSlot(concurrency, delay)
            else:
                slots[key] = LedgerSlot(
                    concurrency,
                    delay,
                    origin=urls.origin(request.url),
                    ledger=self.ledger,
                    downloader=self.crawler.engine.downloader,
                    stats=self.crawler.stats,
                )
            if not meta.get(ROBOTS):
                inc(self.crawler.stats, "politeness/origins")
        elif isinstance(slot, PoliteSlot) and ORIGIN_DELAY in meta:
            slot.delay = self._delay(meta)
            if slot.delay > 0:
                slot.concurrency = 1

    def _delay(self, meta: dict[str, Any]) -> float:
        """The origin's delay: the minimum, or a longer honoured Crawl-delay."""
        return max(self.min_delay, float(meta.get(ORIGIN_DELAY, 0.0)))
