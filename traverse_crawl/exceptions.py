"""Scrapy-side control flow for typed page failures (STYLE §8).

A middleware that decides a page's fate (robots denial, egress refusal, too many
redirects, ...) raises ``PageFailed``; it is an ``IgnoreRequest``, so Scrapy
routes it to the request's errback, where the spider records ``error``.
"""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest

from traverse_crawl.core.errors import FetchError


class PageFailed(IgnoreRequest):
    def __init__(self, error: FetchError) -> None:
        super().__init__(error.message)
        self.error = error
