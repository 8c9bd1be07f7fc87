"""Scrapy's ``HttpErrorMiddleware``, with the typed error on the ``HttpError`` it raises.

A response whose status the spider does not handle reaches the request's errback
as Scrapy's ``HttpError`` (so ``failure.check(HttpError)`` works as before), and
``failure.value.error`` is its ``FetchError``: ``http-error`` with the status.
It replaces the built-in (same settings: ``HTTPERROR_ALLOWED_CODES``,
``HTTPERROR_ALLOW_ALL``, the ``handle_httpstatus_*`` meta keys). A response no errback
took is logged at WARNING with its URL and error kind, where the built-in says INFO.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scrapy.http import Response
from scrapy.spidermiddlewares import httperror

from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.failure_middleware import log_unhandled

HttpError = httperror.HttpError


class HttpErrorMiddleware(httperror.HttpErrorMiddleware):
    def process_spider_input(self, response: Response) -> None:  # type: ignore[override]
        if 200 <= response.status < 300:  # the common case, at the built-in's cost
            return
        try:
            super().process_spider_input(response)
        except HttpError as exc:
            status = response.status
            exc.error = FetchError("http-error", f"HTTP {status} from {response.url}", status)  # type: ignore[attr-defined]
            raise

    def process_spider_exception(  # type: ignore[override]
        self, response: Response, exception: Exception
    ) -> Iterable[Any] | None:
        if isinstance(exception, HttpError):
            error = getattr(exception, "error", None)
            if isinstance(error, FetchError):
                log_unhandled(response.url, error)
                return []
        return super().process_spider_exception(response, exception)
