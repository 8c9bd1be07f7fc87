"""A page warning for every HTTPS response taken without certificate checks.

Enabled only with ``DOWNLOAD_VERIFY_CERTIFICATES`` set to False (intranets, tests):
each HTTPS hop of a page then appends ``TLS certificate of URL not verified
(DOWNLOAD_VERIFY_CERTIFICATES is False)`` to ``traverse_warnings``, so a manifest
shows which content was taken on trust (docs/settings.md).
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.meta_keys import PAGE_ID, WARNINGS


class UnverifiedTlsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        if get_config(crawler).tls_verify:
            raise NotConfigured

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnverifiedTlsMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        if request.url.startswith("https:") and PAGE_ID in request.meta:
            warning = (
                f"TLS certificate of {request.url} not verified "
                "(DOWNLOAD_VERIFY_CERTIFICATES is False)"
            )
            warnings: list[str] = request.meta.setdefault(WARNINGS, [])
            if warning not in warnings:
                warnings.append(warning)
        return response
