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
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest

from traverse_crawl.config.settings import get_config
from traverse_crawl.fetch.exceptions import fetch_error_of

ERROR = "error"  # the attribute of the exception that holds its FetchError


class TypedFailureMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.timeout = config.download_timeout
        self.maxsize = config.download_maxsize

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TypedFailureMiddleware:
        return cls(crawler)

    def process_exception(self, request: Request, exception: Exception) -> None:
        if hasattr(exception, ERROR) or isinstance(exception, IgnoreRequest):
            return  # typed already, or not a failure of ours to type
        error = fetch_error_of(exception, request, self.timeout, self.maxsize)
        try:
            setattr(exception, ERROR, error)
        except AttributeError:  # an exception class with __slots__: left untyped
            pass
