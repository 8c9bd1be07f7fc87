"""Write every page's snapshot to the store in ``capture`` mode (docs/snapshots.md, "Capture").

Each ``PageItem``'s snapshot goes to one writer *process* over a pipe, which commits
the files queued meanwhile together (``snapshots/batch_write.py``), so neither JSON,
file system calls nor fsync run in the crawl's interpreter. The item goes on once
its file is durable, so the pipelines after it (the JOBDIR journal, the manifest)
never name a snapshot that a crash could lose. A failed write is a page warning.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.errors import ConfigError
from traverse_crawl.snapshots.store import FilesystemSnapshotStore
from traverse_crawl.snapshots.writer import Delivered, SnapshotWriter, WriterLost
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class SnapshotStorePipeline:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "capture":
            raise NotConfigured  # live and replay store nothing
        self.crawler = crawler
        self.store = FilesystemSnapshotStore(config.store)
        try:
            os.makedirs(self.store.root, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                "TRAVERSE_STORE", f"cannot create {config.store!r}: {exc.strerror or exc}"
            ) from None
        self.failures = 0
        self.writer: SnapshotWriter | None = None
        self.unavailable: BaseException | None = None  # the writer process could not start
        self.pending: dict[asyncio.Future[PageItem], PageItem] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotStorePipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        try:
            self.writer = SnapshotWriter(asyncio.get_event_loop(), self._delivered)
        except OSError as exc:  # no process to be had (a limit): every page gets the warning
            self.unavailable = WriterLost(f"the snapshot writer process did not start: {exc}")

    async def close_spider(self) -> None:
        writer, self.writer = self.writer, None
        if writer is None:
            return
        ended: Deferred[dict[str, Any]] = Deferred()
        writer.close(ended.callback)  # every item has been through: the child only exits
        summary = await maybe_deferred_to_future(ended)
        self.crawler.stats.set_value("snapshot/batches", writer.batches)
        if summary:
            logger.info(
                "snapshot writer process: %d file(s) in %d batch(es), %.2f s of CPU",
                summary["files"],
                summary["batches"],
                summary["cpu_s"],
            )

    def hard_stop(self, reason: str) -> None:
        """A second signal: pages still being written are not claimed as stored."""
        pending, self.pending = self.pending, {}
        for waiter, item in pending.items():
            self._failed(item, OSError(f"the crawl stopped ({reason}) before it was durable"))
            if not waiter.done():
                waiter.set_result(item)

    def process_item(self, item: Any) -> Any:
        # The answer to the page's batch resolves the returned future with the item
        # once its file is durable (or has failed); it is read on the crawl's asyncio
        # loop, one wake-up per batch. A plain future, not a coroutine awaiting a
        # Deferred: Scrapy awaits any awaitable, and each page is spared a coroutine,
        # a Deferred and its conversion. A revalidated 304 re-puts the prior with its
        # flags under the same file name.
        if not isinstance(item, PageItem) or item.snapshot is None:
            return item
        # The body leaves the item here: the feed and the manifest never carry it.
        snapshot, item.snapshot = item.snapshot, None
        waiter: asyncio.Future[PageItem] = asyncio.get_event_loop().create_future()
        try:
            path = self.store.path(snapshot)
            if self.writer is None:
                raise self.unavailable or RuntimeError("the snapshot writer is closed")
            self.writer.submit(waiter, path, snapshot)
        except Exception as exc:  # a name that cannot be a file, no writer: the page's warning
            self._failed(item, exc)
            return item
        self.pending[waiter] = item
        return waiter

    def _delivered(self, results: Delivered) -> None:
        """One batch is durable (or failed): its pages go on, on the event loop."""
        stored = 0
        for waiter, error in results:
            item = self.pending.pop(waiter, None)
            if item is None:
                continue  # hard_stop has already answered for it
            if error is not None:
                self._failed(item, error)
            else:
                stored += 1
            if not waiter.done():
                waiter.set_result(item)
        if stored:
            inc(self.crawler.stats, "snapshot/stored", stored)

    def _failed(self, item: PageItem, exc: BaseException) -> None:
        # The page keeps its outcome and its sourceRef, with the page warning
        # ``store.put failed (...); page fetch result kept, snapshot not persisted``;
        # the crawl goes on. A failed batch sync, or a writer process that died,
        # fails every page it had not answered for.
        message = _describe(exc)
        spider: Any = self.crawler.spider
        spider.frontiers[item.seed_key].note_store_failure(item.index, message)
        self.failures += 1
        if self.failures == 1:
            logger.warning(
                "snapshot store %s: write failed (%s); pages keep their outcome, "
                "later failures are counted in snapshot/store_failed",
                self.store.root,
                message,
            )
        else:
            logger.debug("snapshot store write failed: %s", message)
        inc(self.crawler.stats, "snapshot/store_failed")


def _describe(exc: BaseException) -> str:
    """``strerror: path`` for OS errors (like Node's ``ENOSPC: ..., open '...'``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
