"""Write every page's snapshot to the store in ``capture`` mode (SPEC §13.6, CONTRACT §2, §4).

Enabled only when ``TRAVERSE_MODE`` is ``capture`` (the default); ``live`` and
``replay`` store nothing. In capture mode the store root ``TRAVERSE_STORE`` is
created at start-up, and a root that cannot be created stops the crawl before
any request, naming the setting (CONTRACT §1).

Each ``PageItem`` with a snapshot is handed to one writer *process*
(``snapshots/writer.py``, ``snapshots/writer_process.py``) over a pipe; it renders
the files and commits those queued meanwhile together (``snapshots/batch_write.py``:
written, synced together, renamed, synced together), so neither JSON, file
system calls nor fsync run in the crawl's interpreter and a batch pays two disk
flushes, not two per page. Its answers are read on the crawl's asyncio loop
(Scrapy's asyncio reactor, which the project requires), one wake-up per batch.
``process_item`` returns an asyncio ``Future`` that the batch's answer resolves
with the item once the page's file is durable (or has failed), so the pipelines
after it — the JOBDIR journal, the manifest — never name a snapshot that a
crash could lose. A plain future, not a coroutine awaiting a ``Deferred``:
Scrapy awaits any awaitable, and each page is spared a coroutine, a
``Deferred`` and its conversion (docs/performance.md, "Capture", round 4).
A revalidated 304 re-puts the prior with its flags under the same file name
(SPEC §13.6). The body is dropped from the item
(``item.snapshot = None``): the feed and the manifest never carry it.

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

Stats: ``snapshot/stored``, ``snapshot/store_failed``, ``snapshot/batches``.
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
        if not isinstance(item, PageItem) or item.snapshot is None:
            return item
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
