"""A crawl's capture: each response's snapshot to the writer process, and when it is durable.

One ``Capture`` per crawler (``capture_of``): the capture middleware submits each final
response's snapshot as it arrives (one ``Write`` each), and the snapshot pipeline passes an
item on once the snapshot it names is durable (``settle``). Also the page ids of requests
that are not frontier pages (``request_page_id``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
from collections.abc import Callable
from typing import Any

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch import urls
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import open_snapshot_store
from traverse_crawl.snapshots.writer import Delivered, SnapshotWriter
from traverse_crawl.stats import inc, inc_lost
from traverse_crawl.storage.bucket import BucketLocation

logger = logging.getLogger(__name__)

# An item that waits for a write; ``Failed`` is told why a write failed.
Failed = Callable[[Any, str], None]


def request_page_id(source_id: str, url: str) -> str | None:
    """``encodeURIComponent(source_id)::URL`` for a request that is not a frontier
    page: its URL as a WHATWG href, fragment removed; None for a URL that is not
    http(s) (nothing is captured or replayed for it)."""
    normalized = urls.normalize(url)
    if normalized is None:
        return None
    try:
        return urls.page_id(source_id, normalized)
    except ValueError:  # a lone surrogate, which encodeURIComponent refuses
        return None


class Write:
    """One snapshot handed to the writer: ``done`` once durable (``error`` None) or failed."""

    __slots__ = ("done", "error", "ref", "waiters")

    def __init__(self, ref: str) -> None:
        self.ref = ref
        self.done = False
        self.error: BaseException | None = None
        self.waiters: list[tuple[asyncio.Future[Any], Any, Failed | None]] | None = None


class Capture:
    def __init__(self, store_root: str, crawler: Any) -> None:
        self.store = open_snapshot_store(store_root, crawler.settings)
        location = self.store.location
        self.bucket = location.describe() if isinstance(location, BucketLocation) else None
        if isinstance(location, BucketLocation):
            location.check("TRAVERSE_STORE")  # once, at start: a missing bucket is exit 2
        else:
            try:
                os.makedirs(self.store.root, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    "TRAVERSE_STORE", f"cannot create {store_root!r}: {exc.strerror or exc}"
                ) from None
        self.crawler = crawler  # its stats collector is read when counting
        self.stall_timeout = get_config(crawler).snapshot_stall_timeout
        self.writer: SnapshotWriter | None = None
        self.closed = False
        self.failures = 0
        self.by_ref: dict[str, Write] = {}  # writes not yet answered, by sourceRef
        # The latest writes that failed for good, by sourceRef: why (``unstored``).
        self.failed_refs: collections.OrderedDict[str, str] = collections.OrderedDict()
        self.held: dict[Write, None] = {}  # writes items wait for, in order

    # -- the writer process --------------------------------------------------

    def open(self) -> None:
        """Start the writer process (once; a submit starts it if nothing has). If no
        process can be had (a limit), every page gets the warning (``WriterLost``)."""
        if self.writer is not None or self.closed:
            return
        self.writer = SnapshotWriter(
            asyncio.get_event_loop(), self._delivered, bucket=self.bucket,
            stall_timeout=self.stall_timeout,
        )  # fmt: skip

    async def close(self) -> None:
        """Let the writer finish what it was given and exit (every item has been through)."""
        self.closed = True
        writer, self.writer = self.writer, None
        if writer is None:
            return
        ended: asyncio.Future[dict[str, Any]] = asyncio.get_event_loop().create_future()

        def on_end(summary: dict[str, Any]) -> None:
            if not ended.done():
                ended.set_result(summary)

        writer.close(on_end)
        summary = await ended
        if self.crawler.stats is not None:
            self.crawler.stats.set_value("snapshot/batches", writer.batches)
        if summary:
            logger.info(
                "snapshot writer process: %d file(s) in %d batch(es), %.2f s of CPU",
                summary["files"],
                summary["batches"],
                summary["cpu_s"],
            )

    # -- writes --------------------------------------------------------------

    def submit(self, snapshot: Snapshot, ref: str) -> Write:
        """Hand one snapshot to the writer; a write that cannot start fails at once."""
        write = Write(ref)
        try:
            path = self.store.key(snapshot) if self.bucket else self.store.path(snapshot)
            if self.writer is None:
                self.open()
            if self.writer is None:
                raise RuntimeError("the snapshot writer is closed")
            self.writer.submit(write, path, snapshot)
        except Exception as exc:  # a name that cannot be a file, no writer: the page's warning
            self._answer(write, exc)
            return write
        self.by_ref[ref] = write
        return write

    def pending(self, ref: object) -> Write | None:
        """The unanswered write of the snapshot ``ref`` names, if there is one."""
        return self.by_ref.get(ref) if isinstance(ref, str) else None

    def unstored(self, ref: object) -> str | None:
        """Why the snapshot ``ref`` names was not stored, when its write failed for good
        (among the latest ``FAILED_REFS_KEPT`` failures), else None."""
        return self.failed_refs.get(ref) if isinstance(ref, str) else None

    def settle(self, write: Write, item: Any, failed: Failed | None = None) -> Any:
        """``item`` once ``write`` is answered: at once, or a future the answer resolves
        with it. ``failed(item, reason)`` is called first if the write failed."""
        if write.done:
            if write.error is not None and failed is not None:
                failed(item, describe(write.error))
            return item
        waiter: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
        if write.waiters is None:
            write.waiters = []
            self.held[write] = None
        write.waiters.append((waiter, item, failed))
        return waiter

    def hard_stop(self, reason: str) -> None:
        """A second signal: snapshots items still wait for are not claimed as stored."""
        held, self.held = list(self.held), {}
        for write in held:
            self._answer(write, OSError(f"the crawl stopped ({reason}) before it was durable"))

    def _delivered(self, results: Delivered) -> None:
        """One batch is durable (or failed): its items go on, on the event loop."""
        stored = 0
        for write, error in results:
            if write.done:
                continue  # hard_stop has already answered for it
            stored += error is None
            self._answer(write, error)
        if stored:
            inc(self.crawler.stats, "snapshot/stored", stored)

    def _answer(self, write: Write, error: BaseException | None) -> None:
        write.done = True
        write.error = error
        if self.by_ref.get(write.ref) is write:
            del self.by_ref[write.ref]
        if error is not None:
            self._failed(error)
            self.failed_refs[write.ref] = describe(error)
            if len(self.failed_refs) > FAILED_REFS_KEPT:
                self.failed_refs.popitem(last=False)
        waiters, write.waiters = write.waiters, None
        if waiters is None:
            return
        self.held.pop(write, None)
        reason = describe(error) if error is not None else ""
        for waiter, item, failed in waiters:
            if error is not None and failed is not None:
                failed(item, reason)
            if not waiter.done():
                waiter.set_result(item)

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        if self.failures == 1:  # an ERROR: the snapshot is lost, and the crawl exits 1
            logger.error(
                "snapshot store %s: write failed (%s); pages keep their outcome, "
                "later failures are counted in snapshot/store_failed",
                self.store.root,
                describe(exc),
            )
        else:
            logger.debug("snapshot store write failed: %s", describe(exc))
        inc_lost(self.crawler.stats, "snapshot/store_failed")


# Failed writes remembered for the items that name their snapshot after the failure was
# answered: a spider's items follow their response closely, so the latest few thousand do.
FAILED_REFS_KEPT = 4096


def describe(exc: BaseException) -> str:
    """``strerror: path`` for OS errors (like Node's ``ENOSPC: ..., open '...'``)."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


_ATTR = "_traverse_capture"


def capture_of(crawler: Any, store_root: str) -> Capture:
    """The crawler's one ``Capture`` (the first component to ask makes it)."""
    capture: Capture | None = getattr(crawler, _ATTR, None)
    if capture is None:
        capture = Capture(store_root, crawler)
        setattr(crawler, _ATTR, capture)
    return capture
