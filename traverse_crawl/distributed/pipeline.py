"""``CommitPipeline`` (850): with ``REDIS_URL``, each page's outcome to Redis.

After the store pipeline (300), so a committed outcome never names a snapshot
that was not stored; the work is the spider's ``Worker`` (``worker.py``). Listed
only with ``REDIS_URL`` (the add-on's ``DISTRIBUTED``, ``addon.py``).
"""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.crawl.items import PageItem


class CommitPipeline:
    """After the store pipeline: each page's outcome to Redis (with ``REDIS_URL``)."""

    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.get("REDIS_URL"):
            raise NotConfigured
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CommitPipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        worker = getattr(self.crawler.spider, "remote", None)
        if isinstance(item, PageItem) and worker is not None:
            await worker.commit(item)
        return item

    async def close_spider(self) -> None:
        worker = getattr(self.crawler.spider, "remote", None)
        if worker is not None:
            await worker.close()
