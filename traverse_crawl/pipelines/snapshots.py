"""Write every page's snapshot to the store in ``capture`` mode (SPEC §13.6, CONTRACT §2, §4).

Enabled only when ``TRAVERSE_MODE`` is ``capture`` (the default); ``live`` and
``replay`` store nothing. In capture mode the store root ``TRAVERSE_STORE`` is
created at start-up, and a root that cannot be created stops the crawl before
any request, naming the setting (CONTRACT §1).

Each ``PageItem`` with a snapshot is written atomically, in a worker thread so
that fsync never blocks the reactor; a revalidated 304 re-puts the prior with
its flags under the same file name (SPEC §13.6). The body is then dropped from
the item (``item.snapshot = None``): the feed and the manifest never carry it.

A write that fails (disk full, permissions, a file where a directory should be)
is a page-scoped warning in the manifest — ``store.put failed (...); page fetch
result kept, snapshot not persisted`` — and the page keeps its outcome and its
``sourceRef``; the crawl goes on. The first failure is logged as a warning,
later ones at debug level; all are counted.

Stats: ``snapshot/stored``, ``snapshot/store_failed``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from traverse_crawl.core.config import get_config
from traverse_crawl.core.errors import ConfigError
from traverse_crawl.core.store import FilesystemSnapshotStore
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

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SnapshotStorePipeline:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem) or item.snapshot is None:
            return item
        snapshot, item.snapshot = item.snapshot, None
        try:
            path = await maybe_deferred_to_future(deferToThread(self.store.put, snapshot))
        except Exception as exc:  # the I/O edge: any failure is the page's warning
            self._failed(item, exc)
        else:
            logger.debug("stored %s", path)
            inc(self.crawler.stats, "snapshot/stored")
        return item

    def _failed(self, item: PageItem, exc: Exception) -> None:
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


def _describe(exc: Exception) -> str:
    """``strerror: path`` for OS errors (like Node's ``ENOSPC: ..., open '...'``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__
