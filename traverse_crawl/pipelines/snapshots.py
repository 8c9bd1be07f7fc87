"""Write every page's snapshot to the store in ``capture`` mode (SPEC §13.6, CONTRACT §2, §4).

Enabled only when ``TRAVERSE_MODE`` is ``capture`` (the default); ``live`` and
``replay`` store nothing. In capture mode the store root ``TRAVERSE_STORE`` is
created at start-up, and a root that cannot be created stops the crawl before
any request, naming the setting (CONTRACT §1).

Each ``PageItem`` with a snapshot is written atomically by one writer thread
that commits the files queued meanwhile together (``core/groupcommit.py``:
written, synced together, renamed, synced together), so neither fsync nor
serialising blocks the reactor and a batch pays two disk flushes, not two per
page. ``process_item`` returns only once the page's file is durable, so the
pipelines after it — the JOBDIR journal, the manifest — never name a snapshot
that a crash could lose. A revalidated 304 re-puts the prior with its flags
under the same file name (SPEC §13.6). The body is dropped from the item
(``item.snapshot = None``): the feed and the manifest never carry it.

A write that fails (disk full, permissions, a file where a directory should be)
is a page-scoped warning in the manifest — ``store.put failed (...); page fetch
result kept, snapshot not persisted`` — and the page keeps its outcome and its
``sourceRef``; the crawl goes on. The first failure is logged as a warning,
later ones at debug level; all are counted. When a batch's sync fails, every
page of that batch fails so; pages of earlier batches were durable already.
After a second SIGINT/SIGTERM (``hard_stop``), a page whose batch is still
being written gets the same warning, so the manifest written next never claims it.

Stats: ``snapshot/stored``, ``snapshot/store_failed``, ``snapshot/batches``.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from traverse_crawl.core.config import get_config
from traverse_crawl.core.errors import ConfigError
from traverse_crawl.core.groupcommit import GroupCommitWriter, Result
from traverse_crawl.core.store import FilesystemSnapshotStore, encode
from traverse_crawl.items import PageItem
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
        self.writer: GroupCommitWriter | None = None
        self.pending: dict[Deferred[tuple[str, BaseException | None]], PageItem] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotStorePipeline:
        return cls(crawler)

    def open_spider(self) -> None:
        from twisted.internet import reactor

        def deliver(results: list[Result]) -> None:  # in the writer thread
            reactor.callFromThread(self._delivered, results)

        self.writer = GroupCommitWriter(deliver)

    async def close_spider(self) -> None:
        writer, self.writer = self.writer, None
        if writer is not None:  # every item has been through: this only stops the thread
            await maybe_deferred_to_future(deferToThread(writer.close))

    def hard_stop(self, reason: str) -> None:
        """A second signal: pages still being written are not claimed as stored."""
        for item in self.pending.values():
            self._failed(item, OSError(f"the crawl stopped ({reason}) before it was durable"))
        self.pending.clear()

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem) or item.snapshot is None:
            return item
        snapshot, item.snapshot = item.snapshot, None
        try:
            path = self.store.path(snapshot)
            assert self.writer is not None, "open_spider starts the writer"
            done: Deferred[tuple[str, BaseException | None]] = Deferred()
            self.writer.submit(done, path, functools.partial(encode, snapshot))
        except Exception as exc:  # a name that cannot be a file: the page's warning
            self._failed(item, exc)
            return item
        self.pending[done] = item
        path, error = await maybe_deferred_to_future(done)
        if self.pending.pop(done, None) is None:
            return item  # hard_stop has already answered for it
        if error is not None:
            self._failed(item, error)
        else:
            logger.debug("stored %s", path)
            inc(self.crawler.stats, "snapshot/stored")
        return item

    def _delivered(self, results: list[Result]) -> None:
        """One batch is durable (or failed): wake its pages, in the reactor thread."""
        inc(self.crawler.stats, "snapshot/batches")
        for done, path, error in results:
            done.callback((path, error))

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
