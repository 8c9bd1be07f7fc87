"""Each item goes on once the snapshot it names is durable (docs/snapshots.md, "Capture").

The capture middleware hands each response's snapshot to the crawl's one writer
process as the response arrives (``snapshots/capture.py``). Here a page item of the
traverse spider waits for its page's write, and any other item for the write of the
snapshot its ``sourceRef`` field names, if that one is not durable yet; so the
pipelines after this one (the JOBDIR journal, the manifest, a feed) never name a
snapshot that a crash could lose. A failed write is a page warning; any other item
of that snapshot goes on with its ``sourceRef`` field set to null, and a warning.
"""

from __future__ import annotations

import logging
from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.snapshots.capture import capture_of

logger = logging.getLogger(__name__)


class SnapshotStorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "capture":
            raise NotConfigured  # live and replay store nothing
        self.crawler = crawler
        self.capture = capture_of(crawler, config.store)
        self.field = config.item_source_field
        self.unstored_ref: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotStorePipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        self.capture.open()

    async def close_spider(self) -> None:
        await self.capture.close()  # every item has been through: the writer only exits

    def hard_stop(self, reason: str) -> None:
        """A second signal: pages still being written are not claimed as stored."""
        self.capture.hard_stop(reason)

    def process_item(self, item: Any) -> Any:
        # The returned future is resolved with the item by the answer to the batch of
        # its file, read on the crawl's asyncio loop, one wake-up per batch. A plain
        # future, not a coroutine awaiting a Deferred: Scrapy awaits any awaitable, and
        # each page is spared a coroutine, a Deferred and its conversion. A page whose
        # write failed keeps its outcome and its sourceRef, with the page warning
        # ``store.put failed (...); page fetch result kept, snapshot not persisted``.
        if isinstance(item, PageItem):
            write, item.stored = item.stored, None
            return item if write is None else self.capture.settle(write, item, self._failed)
        try:
            ref = ItemAdapter(item).get(self.field)
        except TypeError:  # not an item ItemAdapter knows
            return item
        write = self.capture.pending(ref)
        if write is None:  # durable already, or failed for good before the item came
            reason = self.capture.unstored(ref)
            if reason is not None:
                self._item_failed(item, reason)
            return item
        return self.capture.settle(write, item, self._item_failed)

    def _item_failed(self, item: Any, reason: str) -> None:
        """A spider's item whose snapshot was not stored names none: a ``sourceRef`` is
        a claim that its bytes can be read back, and these cannot."""
        adapter = ItemAdapter(item)
        ref = adapter.get(self.field)
        adapter[self.field] = None
        if ref != self.unstored_ref:  # one line per snapshot, not per item
            self.unstored_ref = ref
            logger.warning(
                "items of %s are passed on with %s = null: their snapshot was not stored (%s)",
                ref, self.field, reason,
            )  # fmt: skip

    def _failed(self, item: PageItem, reason: str) -> None:
        frontiers = Frontiers.of(self.crawler.spider)
        if frontiers is not None:
            frontiers.frontier(item.seed_key).note_store_failure(item.index, reason)
