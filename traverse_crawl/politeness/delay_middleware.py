"""Per-origin politeness through Scrapy's download slots.

Every request goes to the download slot of its origin (``download_slot``, set here
whatever a spider named): a ``DelaySlot``, or with ``REDIS_URL`` a ``LedgerSlot`` that
waits for the crawl's per-origin ledger in Redis. Waiting happens in the slot's queue, not here
(docs/architecture.md, "Politeness, concretely"). At ``response_downloaded`` (before
the downloader looks at the slot's queue again) each response moves its origin's
back-off and pace (politeness/backoff.py; stat ``politeness/backoffs``), and a request
to an origin given up after ``TRAVERSE_BLOCK_STOP_AFTER`` block pages fails ``blocked``
unsent (docs/crawling-real-sites.md, "Sites that push back").
"""

from __future__ import annotations

import logging
from functools import partial
from time import monotonic
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.fetch import urls
from traverse_crawl.meta_keys import BACKOFF, NOT_BEFORE, ORIGIN_DELAY, ROBOTS
from traverse_crawl.politeness.backoff import is_push_back, is_success
from traverse_crawl.politeness.blocking import pushback
from traverse_crawl.politeness.delay_slot import DelaySlot
from traverse_crawl.politeness.retry import parse_retry_after
from traverse_crawl.politeness.shared import shared_politeness
from traverse_crawl.runtime.stop import CrawlStopped, stopping
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class PolitenessMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it
        self.min_delay = config.min_delay
        self.per_domain = crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN") or 8
        self.shared = shared_politeness(crawler)
        self.pushback = pushback(crawler)
        self.blocks = bool(self.pushback.patterns)  # TRAVERSE_BLOCK_PATTERNS: judge responses
        self.retry_times = config.retry_times
        self.slowed: set[str] = set()  # origins whose first back-off was logged
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PolitenessMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> None:
        if stopping(self.crawler) and not request.meta.get(ROBOTS):
            # SIGINT/SIGTERM: nothing new starts (runtime/stop.py).
            raise CrawlStopped(f"crawl stopped before {request.url} was sent")
        meta = request.meta
        if not meta.get(ROBOTS) and (given_up := self.pushback.given_up(request)) is not None:
            inc(self.crawler.stats, "politeness/given_up_pages")
            raise given_up
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
            if meta.get(ROBOTS):
                slots[key] = DelaySlot(concurrency, delay)
            elif self.shared is None:
                slots[key] = DelaySlot(concurrency, delay, self.pushback.pace(origin))
            else:
                slot = slots[key] = self.shared.origin_slot(concurrency, delay, origin)
                slot.pace = self.pushback.pace(origin)
                if self.pushback.runs.stop_after:
                    slot.on_gone = partial(self._gone, origin)
            if not meta.get(ROBOTS):
                inc(self.crawler.stats, "politeness/origins")
        elif isinstance(slot, DelaySlot) and ORIGIN_DELAY in meta:
            slot.delay = self._delay(meta)
            if slot.delay > 0:
                slot.concurrency = 1

    def _last_attempt(self, meta: dict[str, Any]) -> bool:
        """No retry follows this attempt (the retry middleware's rule): a block page
        now is a page recorded ``blocked``."""
        return bool(meta.get("dont_retry")) or meta.get("retry_times", 0) >= self.retry_times

    def _page_blocked(self, origin: str) -> None:
        """One more page of ``origin`` recorded ``blocked``, counted before the downloader
        sends the origin's next request (in a Redis crawl, before this worker lets the
        origin go): at TRAVERSE_BLOCK_STOP_AFTER in a row, the origin is given up."""
        stop_after = self.pushback.runs.stop_after
        if self.shared is not None:
            self.shared.page_blocked(origin, stop_after)  # every worker's pages count
        elif self.pushback.runs.page_blocked(origin):
            self.pushback.give_up(origin, self.pushback.runs.given_up[origin])

    def _gone(self, origin: str, run: int) -> None:
        """The ledger says another worker's block pages gave ``origin`` up."""
        if origin not in self.pushback.runs.given_up:
            self.pushback.give_up(origin, run)

    def _delay(self, meta: dict[str, Any]) -> float:
        """The origin's delay: the minimum, or a longer honoured Crawl-delay."""
        return max(self.min_delay, float(meta.get(ORIGIN_DELAY, 0.0)))

    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        """Each response of an origin's slot moves its back-off and pace, before the
        downloader dispatches the slot's next request."""
        meta = request.meta
        if meta.get(ROBOTS):
            return
        blocked = self.blocks and self.pushback.judge(request, response) is not None
        origin = meta.get("download_slot", "")  # the origin (process_request set it)
        slot = self.crawler.engine.downloader.slots.get(origin)
        if not isinstance(slot, DelaySlot) or slot.pace is None:
            return
        pace, took = slot.pace, monotonic() - slot.lastseen
        status = response.status
        if blocked or is_push_back(status):
            header = response.headers.get(b"Retry-After") if not blocked else None
            retry_after = parse_retry_after(header.decode("latin-1")) if header else None
            extra = pace.push_back(retry_after)
            pace.paced(took)
            inc(self.crawler.stats, "politeness/backoffs")
            if origin not in self.slowed:  # once per origin, then counted
                self.slowed.add(origin)
                logger.info(
                    "%s pushes back (%s): its requests now wait %.1f s more",
                    origin, "a block page" if blocked else f"HTTP {status}", extra,
                )  # fmt: skip
            if self.shared is not None:
                self.shared.push_back(origin, retry_after)
            if blocked and self.pushback.runs.stop_after and self._last_attempt(meta):
                self._page_blocked(origin)
            return
        if self.pushback.runs.runs:
            self.pushback.runs.page_answered(origin)
        if self.shared is not None and slot.blocked_run:
            slot.blocked_run = 0
            self.shared.run_ended(origin)
        had = pace.extra
        if is_success(status):
            pace.answered(took)
        else:
            pace.paced(took)
        # In a Redis crawl the origin's back-off may have been raised by another worker
        # since this worker's grant: whenever the ledger's delay was above this worker's
        # own, the success halves the ledger's back-off, whoever raised it.
        shared_more = getattr(slot, "shared_delay", 0.0) > slot.delay  # a LedgerSlot's
        if self.shared is not None and (had or pace.factor or shared_more):
            self.shared.answered(origin, pace.pace, is_success(status))
