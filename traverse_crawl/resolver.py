"""Placeholder while the component is built: Scrapy's default resolver."""

from scrapy.resolver import CachingThreadedResolver as PinnedResolver

__all__ = ["PinnedResolver"]
