"""Pass each item on once the snapshot it names is durable, in ``capture`` mode (docs/snapshots.md).

Enabled only when ``TRAVERSE_MODE`` is ``capture`` (the default); ``live`` and
``replay`` store nothing. In capture mode the store root ``TRAVERSE_STORE`` is
created at start-up, and a root that cannot be created stops the crawl before
any request, naming the setting (docs/settings.md).

The capture middleware (``snapshots/capture_middleware.py``) hands each final
response's snapshot to one writer *process* as soon as the response arrives
(``snapshots/capture.py``, ``snapshots/writer.py``); it renders the files and
commits those queued meanwhile together (``snapshots/batch_write.py``: written,
synced together, renamed, synced together), so neither JSON, file system calls
nor fsync run in the crawl's interpreter and a batch pays two disk flushes, not
two per page. Its answers are read on the crawl's asyncio loop, one wake-up per
batch. Here ``process_item`` returns, for an item whose snapshot is not durable
yet, an asyncio ``Future`` that the batch's answer resolves with the item once
the file is durable (or has failed), so the pipelines after it — the JOBDIR
journal, the manifest, a user's export — never name a snapshot that a crash
could lose. A plain future, not a coroutine awaiting a ``Deferred``: Scrapy
awaits any awaitable, and each page is spared a coroutine and a ``Deferred``.
A page item of the traverse spider waits for its page's write; any other item
waits for the write of the snapshot its ``sourceRef`` field names, if that one
is still being written. Items pass through otherwise untouched.

A write that fails (disk full, permissions, a file where a directory should be)
is a page-scoped warning in the manifest — ``store.put failed (...); page fetch
result kept, snapshot not persisted`` — and the page keeps its outcome and its
``sourceRef``; the crawl goes on. The first failure is logged as a warning,
later ones at debug level; all are counted. When a batch's sync fails, every
page of that batch fails so; pages of earlier batches were durable already. If
the writer process dies (killed, crashed), every page it had not answered for,
and every later page, fails so (``the snapshot writer process ended (...)``).
After a second SIGINT/SIGTERM (``hard_stop``), a page whose batch is still
being written gets the same warning, so the manifest written next never claims it.
A revalidated 304 re-puts the prior with its flags under the same file name.

Stats: ``snapshot/stored``, ``snapshot/store_failed``, ``snapshot/batches``.
"""

from __future__ import annotations

from typing import Any

from itemadapter import ItemAdapter
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.snapshots.capture import capture_of


class SnapshotStorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "capture":
            raise NotConfigured  # live and replay store nothing
        self.crawler = crawler
        self.capture = capture_of(crawler, config.store)
        self.field = config.item_source_field

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
        if isinstance(item, PageItem):
            write, item.stored = item.stored, None
            return item if write is None else self.capture.settle(write, item, self._failed)
        try:
            ref = ItemAdapter(item).get(self.field)
        except TypeError:  # not an item ItemAdapter knows
            return item
        write = self.capture.pending(ref)
        return item if write is None else self.capture.settle(write, item)

    def _failed(self, item: PageItem, reason: str) -> None:
        frontier = getattr(self.crawler.spider, "frontier", None)
        if frontier is not None:
            frontier(item.seed_key).note_store_failure(item.index, reason)
