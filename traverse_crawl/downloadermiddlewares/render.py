"""Placeholder while the component is built; disabled."""

from scrapy.exceptions import NotConfigured


class RenderMiddleware:
    @classmethod
    def from_crawler(cls, crawler):  # type: ignore[no-untyped-def]
        raise NotConfigured
