"""Bounded, jittered retries. Replaces Scrapy's RetryMiddleware.

Retried: network errors, timeouts, 429 and every 5xx, and block pages (an attempt
that ``TRAVERSE_BLOCK_PATTERNS`` judged ``blocked``). A retry is a new attempt
whose wait (``traverse_backoff``: the jittered backoff, or an honoured
``Retry-After``, or the origin's back-off when longer) the origin's politeness slot
does, at the head of its queue; each retry adds the page warning
``retry n/N for URL after REASON``. A page whose every attempt was a block page fails
``blocked``.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import load_object
from twisted.internet import defer
from twisted.internet.error import TimeoutError as TxTimeoutError

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.attempt import next_attempt
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.fetch.failures import is_untrusted_certificate
from traverse_crawl.fetch.handler import headers_too_large
from traverse_crawl.meta_keys import BACKOFF, BLOCKED, WARNINGS
from traverse_crawl.politeness.blocking import pushback
from traverse_crawl.politeness.retry import is_retryable_status, retry_wait
from traverse_crawl.politeness.shared import shared_politeness
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

_TIMEOUTS = (DownloadTimeoutError, TxTimeoutError, defer.TimeoutError)


class RetryMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it
        self.max_retries = config.retry_times
        self.backoff = config.retry_backoff
        self.retry_after_max = config.retry_after_max
        self.random = random.Random().random
        self.shared = shared_politeness(crawler)
        self.pushback = pushback(crawler)
        self.blocks = bool(self.pushback.patterns)  # TRAVERSE_BLOCK_PATTERNS
        self.network_errors = tuple(
            load_object(x) if isinstance(x, str) else x
            for x in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RetryMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        blocked = request.meta.get(BLOCKED) if self.blocks else None
        if blocked is not None:
            return self._blocked(request, response, blocked)
        if request.meta.get("dont_retry") or not is_retryable_status(response.status):
            return response
        retry_after = response.headers.get(b"Retry-After")
        header = retry_after.decode("latin-1") if retry_after else None
        return self._retry(request, f"HTTP {response.status}", header) or response

    def process_exception(self, request: Request, exception: Exception) -> Request | None:
        if request.meta.get("dont_retry") or isinstance(exception, IgnoreRequest):
            return None
        if headers_too_large(exception) is not None or is_untrusted_certificate(exception):
            return None  # the same server sends the same headers, or certificate, again
        if isinstance(exception, _TIMEOUTS):
            reason = "timeout"
        elif isinstance(exception, self.network_errors) and "max size" not in str(exception):
            reason = "network"
        else:
            return None
        return self._retry(request, reason, None)

    def _blocked(self, request: Request, response: Response, message: str) -> Request:
        """A block page: retried as a 429 is; when no attempt is left, the page fails
        ``blocked`` (never a response the spider or the capture could keep)."""
        if not request.meta.get("dont_retry"):
            retry = self._retry(request, "a block page", None)
            if retry is not None:
                return retry
        # Counted towards TRAVERSE_BLOCK_STOP_AFTER already, as the response arrived
        # (the politeness middleware).
        inc(self.crawler.stats, "politeness/blocked_pages")
        raise PageFailed(FetchError("blocked", message, response.status))

    def _retry(self, request: Request, reason: str, retry_after: str | None) -> Request | None:
        spider: Any = self.crawler.spider
        new = get_retry_request(
            request,
            spider=spider,
            reason=reason,
            max_retry_times=self.max_retries,
            priority_adjust=0,
            logger=logger,
            give_up_log_level=logging.DEBUG,
        )
        if new is None:
            # Retries ran out: the last outcome stands (the spider makes it
            # http-error, timeout or network).
            return None
        # A new attempt of the same request: the count goes on, the rest starts afresh.
        new = new.replace(meta=next_attempt(new.meta, retry=True))
        attempt = new.meta["retry_times"]
        warnings: list[str] = request.meta.setdefault(WARNINGS, [])
        warnings.append(f"retry {attempt}/{self.max_retries} for {request.url} after {reason}")
        # The origin's back-off, raised by this response already, when it is longer.
        wait = new.meta[BACKOFF] = max(
            retry_wait(attempt, self.backoff, retry_after, self.retry_after_max, self.random),
            self.pushback.extra(urls.origin(request.url)),
        )
        if self.shared is not None:
            # Every worker holds back from the origin, not only this retry: the wait
            # is the origin's "not before" time in Redis (distributed/ledger.py).
            self.shared.hold_off(urls.origin(request.url), wait)
        return new
