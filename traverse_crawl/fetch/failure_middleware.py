"""Typed failures for every request of every spider (docs/settings.md, "Typed failures").

The outermost downloader middleware: its ``process_exception`` runs after every
other's, so it sees each request's exception once retries are spent. It sets the
exception's ``error`` to its ``FetchError`` (``kind``, ``message``, ``status``) and
lets it go on, so an errback gets the exception it would get without
traverse_crawl — ``failure.check(TimeoutError)`` still works — and reads
``failure.value.error.kind``. A ``PageFailed`` (robots-denied, egress-denied,
no-snapshot, ...) carries its error already; any other ``IgnoreRequest`` (a
request another component dropped) is passed on as it is. A non-2xx response
filtered by Scrapy's ``HttpError`` is typed by ``fetch/http_error_middleware.py``.

A spider's request that fails with no errback to hand the failure to is logged once,
at WARNING, with its URL and error kind (``UnhandledFailureLog`` marks those requests
as the spider yields them). Scrapy itself says nothing of an ``IgnoreRequest`` (an
egress refusal, a replay with no snapshot) and logs anything else as an ERROR with a
traceback; the failure is passed on as a ``PageFailed`` after the warning, so Scrapy
adds nothing. Requests a component awaits itself (``engine.download``) are not marked:
their caller gets the exception unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.exceptions import PageFailed, fetch_error_of
from traverse_crawl.meta_keys import UNHANDLED
from traverse_crawl.runtime.stop import CrawlStopped
from traverse_crawl.signals import request_failed

ERROR = "error"  # the attribute of the exception that holds its FetchError

logger = logging.getLogger(__name__)


class TypedFailureMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.crawler = crawler
        self.timeout = config.download_timeout
        self.maxsize = config.download_maxsize

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TypedFailureMiddleware:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> None:
        error = getattr(exception, ERROR, None)
        if error is None and not isinstance(exception, IgnoreRequest):
            error = fetch_error_of(exception, request, self.timeout, self.maxsize)
            try:
                setattr(exception, ERROR, error)
            except AttributeError:  # an exception class with __slots__: left untyped
                pass
        if isinstance(error, FetchError):  # a failed page of any spider (TRAVERSE_CHECKS)
            self.crawler.signals.send_catch_log(request_failed, request=request, error=error)
        if (
            isinstance(error, FetchError)
            and request.meta.get(UNHANDLED)
            and request.errback is None
            and not isinstance(exception, CrawlStopped)
        ):
            log_unhandled(request.url, error)
            if not isinstance(exception, IgnoreRequest):
                raise PageFailed(error) from exception  # said once: Scrapy stays silent


def log_unhandled(url: str, error: FetchError) -> None:
    logger.warning("%s failed with no errback to handle it: %s: %s", url, error.kind, error.message)


class UnhandledFailureLog:
    """Spider middleware: marks each request a spider yields with no errback, so its
    failure is logged (``TypedFailureMiddleware``, above)."""

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for out in start:
            yield mark(out)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterable[Any]:
        for out in result:
            yield mark(out)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for out in result:
            yield mark(out)


def mark(out: Any) -> Any:
    if isinstance(out, Request) and out.errback is None:
        out.meta[UNHANDLED] = True
    return out
