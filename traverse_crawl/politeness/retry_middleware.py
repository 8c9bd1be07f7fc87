"""Bounded, jittered retries. Replaces Scrapy's RetryMiddleware.

Retried: network errors, timeouts, 429 and every 5xx. A retry is a new attempt
whose wait (``traverse_backoff``: the jittered backoff, or an honoured
``Retry-After``) the origin's politeness slot does, at the head of its queue;
each retry adds the page warning ``retry n/N for URL after REASON``.
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
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.attempt import next_attempt
from traverse_crawl.fetch.failures import is_untrusted_certificate
from traverse_crawl.fetch.handler import headers_too_large
from traverse_crawl.meta_keys import BACKOFF, WARNINGS
from traverse_crawl.politeness.retry import is_retryable_status, retry_wait
from traverse_crawl.politeness.shared import shared_politeness

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
        self.network_errors = tuple(
            load_object(x) if isinstance(x, str) else x
            for x in crawler.settings.getlist("RETRY_EXCEPTIONS")
        )

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RetryMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Request | Response:
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
        wait = new.meta[BACKOFF] = retry_wait(
            attempt, self.backoff, retry_after, self.retry_after_max, self.random
        )
        if self.shared is not None:
            # Every worker holds back from the origin, not only this retry: the wait
            # is the origin's "not before" time in Redis (distributed/ledger.py).
            self.shared.hold_off(urls.origin(request.url), wait)
        return new
