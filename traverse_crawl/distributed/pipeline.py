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
from traverse_crawl.politeness.block_pages import given_up_origin
from traverse_crawl.politeness.shared import SharedPoliteness, shared_politeness


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
            await once_per_seed(shared_politeness(self.crawler), item)
            await worker.commit(item)
        return item

    async def close_spider(self) -> None:
        worker = getattr(self.crawler.spider, "remote", None)
        if worker is not None:
            await worker.close()


async def once_per_seed(shared: SharedPoliteness | None, item: PageItem) -> None:
    """Each worker warns a seed once that an origin was given up (TRAVERSE_BLOCK_STOP_AFTER):
    the first to claim it in Redis keeps its warning, the others drop theirs, so the
    manifest says it once, as a single process's does."""
    outcome = item.outcome
    warnings = outcome.fetch.get("warnings") if outcome is not None else None
    if shared is None or outcome is None or not warnings:
        return
    for warning in list(warnings):
        origin = given_up_origin(warning)
        if origin is None or await shared.claim_given_up_warning(origin, item.seed_key):
            continue
        for fetch in (outcome.fetch, item.get("fetch") or {}):
            kept = [w for w in fetch.get("warnings", ()) if w != warning]
            if kept:
                fetch["warnings"] = kept
            else:
                fetch.pop("warnings", None)
