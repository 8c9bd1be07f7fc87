"""Scrapy's ``HttpCompressionMiddleware``, with a typed ``too-large`` for a decompression bomb.

Scrapy stops decoding a body (gzip, deflate, brotli, zstd) that passes
``DOWNLOAD_MAXSIZE`` and drops the response with an ``IgnoreRequest``, from a
``process_response`` no later middleware sees. Here that is a ``PageFailed``
(an ``IgnoreRequest`` too) carrying ``too-large``, so every spider's errback gets
the typed error. It replaces the built-in, with the same settings.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares import httpcompression
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils._compression import _DecompressionMaxSizeExceeded

from traverse_crawl.config.settings import get_config
from traverse_crawl.fetch.exceptions import PageFailed, too_large_error


class HttpCompressionMiddleware(httpcompression.HttpCompressionMiddleware):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler=crawler)
        self.maxsize = get_config(crawler).download_maxsize

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response
    ) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest as exc:
            if not isinstance(exc.__cause__, _DecompressionMaxSizeExceeded):
                raise
            maxsize = request.meta.get("download_maxsize", self.maxsize)
            raise PageFailed(too_large_error(request, maxsize)) from exc
