"""Replay mode: every page from the snapshot store, no network at all (docs/snapshots.md, "Replay").

At priority 50 it answers every request before any other middleware acts, so no
request reaches a download handler; the middlewares that only act on a download are
not installed in replay at all. A page request (``traverse_page_id``: a frontier page,
or any spider's request, which the capture middleware gives its page id first) or
sitemap file (``traverse_sitemap_id``) gets its latest snapshot, flagged ``fromCache``;
a page with none fails alone with ``no-snapshot``. With ``TRAVERSE_REPLAY_READER`` a
reader process reads the frontier pages ahead as they are scheduled (``replay/reader.py``).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.meta_keys import (
    PAGE_ID,
    REPLAY_READ,
    REPLAY_WORK,
    SEED,
    SITEMAP_ID,
    SNAPSHOT,
    WARNINGS,
)
from traverse_crawl.replay.reader import Read, ReplayReader
from traverse_crawl.replay.reader_child import Answer, unusable
from traverse_crawl.snapshots.model import BINARY_TYPES, MEDIA_TYPES, Snapshot, with_flags
from traverse_crawl.snapshots.store import open_snapshot_store
from traverse_crawl.stats import inc, inc_lost
from traverse_crawl.storage.bucket import BucketLocation

logger = logging.getLogger(__name__)
store_logger = logging.getLogger("traverse_crawl.snapshots.store")  # its damaged-file lines

# A Content-Type that resolves back to the stored type (``resolve_content_type``), for callbacks
# that look at the Response rather than at the snapshot.
_CONTENT_TYPES = MEDIA_TYPES
# Pages asked of the reader and not yet taken by a request: enough to keep the
# downloader's 16 fed while the reader runs ahead, few enough that the answers
# held (a snapshot each) stay small however many pages are scheduled — and fewer
# when pages are large: about READ_AHEAD_BYTES of answers the size of a recent
# large one (``ReplayReader.large``), but never fewer than two.
READ_AHEAD = 64
READ_AHEAD_BYTES = 32 * 1024 * 1024


class ReplayMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "replay":
            raise NotConfigured  # only replay serves from the store
        self.crawler = crawler
        self.store = open_snapshot_store(config.store, crawler.settings)
        self.max_links = config.max_links_per_page
        self.reader: ReplayReader | None = None
        self.ahead = 0  # asked of the reader, not yet taken by their requests
        self.queued: collections.deque[Request] = collections.deque()  # to ask, in order
        self.waiters: dict[Read, tuple[Request, asyncio.Future[Response]]] = {}
        logger.info("replay mode: every page is served from %s, no network", self.store.root)
        if config.replay_reader and self.store.exists():  # no store: one page per seed
            # Started with the crawler, not at spider_opened: its start-up (an interpreter,
            # lxml; about 0.1 s) then runs beside Scrapy's, not while the seed waits.
            self._start()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReplayMiddleware:
        return cls(crawler)

    # -- the reader ----------------------------------------------------------

    def _start(self) -> None:
        location = self.store.location
        bucket = location.describe() if isinstance(location, BucketLocation) else None
        self.reader = ReplayReader(
            asyncio.get_event_loop(), self.store.root, self.max_links, self._ready, bucket=bucket
        )  # if no process can be had, every page is read here (``ReplayReader``)
        self.crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)
        self.crawler.signals.connect(self._close, signal=signals.spider_closed)
        self.crawler.signals.connect(self._reap, signal=signals.engine_stopped)

    def _close(self) -> None:
        if self.reader is not None:
            self.reader.close()  # it exits meanwhile; reaped once the engine has stopped

    async def _reap(self) -> None:
        reader, self.reader = self.reader, None
        if reader is None:
            return
        cpu = await reader.reap()
        if cpu is not None:
            logger.info(
                "replay reader process: %d page(s) read ahead, %.2f s of CPU", reader.asked, cpu
            )

    def _scheduled(self, request: Request) -> None:
        # Frontier pages only: another request may yet be dropped as a duplicate once
        # scheduled, and an answer read ahead for it would hold a place for good.
        if SEED in request.meta and isinstance(request.meta.get(PAGE_ID), str):
            self.queued.append(request)
            self._ask()

    def _ask(self) -> None:
        """Ask the reader for queued pages, in order, up to ``READ_AHEAD`` answers held."""
        reader = self.reader
        if reader is None:
            return
        limit = max(2, min(READ_AHEAD, READ_AHEAD_BYTES // reader.large))
        while self.queued and self.ahead < limit and reader.alive:
            meta = self.queued.popleft().meta
            if REPLAY_READ not in meta:  # not asked for already, out of turn
                meta[REPLAY_READ] = reader.read(meta[PAGE_ID], self._links_wanted(meta))
                self.ahead += 1

    def _links_wanted(self, meta: dict[str, Any]) -> bool:
        """Whether the spider reads this page's links (the ``traverse`` spider's
        ``Frontiers.reads_links``); any other spider reads no ``PageWork.links``."""
        frontiers = Frontiers.of(self.crawler.spider)
        return frontiers is not None and frontiers.reads_links(meta)

    def _ready(self, read: Read) -> None:
        """The answer a request waits for has come (or will not: the page is read here)."""
        request, waiter = self.waiters.pop(read)
        if waiter.done():
            return
        try:
            waiter.set_result(self._serve(request, read.answer))
        except Exception as exc:  # PageFailed, IgnoreRequest: as if raised by process_request
            waiter.set_exception(exc)

    # -- serving -------------------------------------------------------------

    def process_request(self, request: Request) -> Response | asyncio.Future[Response]:
        # The page's work, done by the reader (links, sourceRef, bodySize, the body's
        # bytes, with the crawl's own functions), goes to the spider as REPLAY_WORK. A
        # request whose page the reader was not asked for, every request once the
        # reader is gone (killed, never started), and every sitemap file are read here,
        # in the crawl: the replay is the same either way, only slower.
        meta = request.meta
        read: Read | None = meta.pop(REPLAY_READ, None)
        if read is None:  # not asked of the reader: no reader, or its turn had not come
            if self.reader is not None:
                meta[REPLAY_READ] = None  # served: ``_ask`` passes over it when its turn comes
            return self._serve(request, None)
        self.ahead -= 1
        self._ask()
        if read.page_id != meta.get(PAGE_ID):  # a copied meta: not this page's
            return self._serve(request, None)
        if read.answer is not None or read.lost:
            return self._serve(request, read.answer)
        read.waiting = True
        waiter: asyncio.Future[Response] = asyncio.get_event_loop().create_future()
        self.waiters[read] = (request, waiter)
        return waiter

    def _serve(self, request: Request, answer: Answer | None) -> Response:
        """The page's Response from the reader's ``answer``, or from a read here (None)."""
        page_id = request.meta.get(PAGE_ID) or request.meta.get(SITEMAP_ID)
        if not isinstance(page_id, str):
            inc(self.crawler.stats, "replay/refused")
            raise IgnoreRequest(f"replay mode makes no network request: {request.url}")
        message = f'no snapshot stored for sourceId "{page_id}"'
        body: bytes | None = None
        failed: str | None = None
        if answer is not None:
            snapshot, damaged, failed = answer.snapshot, answer.damaged, answer.failed
            for problem in damaged:  # the lines the store logs when it reads here
                store_logger.warning("%s; skipped", problem)
            if failed is None and snapshot is not None:
                if answer.work is not None:  # the reader has checked the body's hash
                    request.meta[REPLAY_WORK] = answer.work
                    body = answer.body
                else:
                    failed = unusable(snapshot)
        else:
            damaged = []
            try:
                # Read in the reactor thread: a thread-pool hop per page costs more
                # than the read (the reader process is the way to read ahead). strict:
                # an object a bucket could not serve is not taken for "not stored".
                snapshot = self.store.latest(page_id, damaged, strict=True)
                failed = None if snapshot is None else unusable(snapshot)
            except Exception as exc:  # the I/O edge: the page fails, the crawl goes on
                # (Traverse lets this exception end the whole crawl.)
                snapshot, failed = None, str(exc) or type(exc).__name__
        if damaged:
            inc(self.crawler.stats, "replay/damaged")
        if failed is not None:
            # Stored, perhaps, but not to be had: something of the capture is lost to
            # this replay (exit status 1), never served as another response in silence.
            logger.warning("replay: the snapshot of %r cannot be used: %s", page_id, failed)
            inc_lost(self.crawler.stats, "replay/unreadable")
            message = f'no usable snapshot for sourceId "{page_id}": {failed}'
            raise PageFailed(FetchError("no-snapshot", message))
        if snapshot is None:
            inc(self.crawler.stats, "replay/miss")
            if damaged:
                message = f'no usable snapshot for sourceId "{page_id}": {"; ".join(damaged)}'
            raise PageFailed(FetchError("no-snapshot", message))
        request.meta.setdefault(WARNINGS, []).extend(damaged)
        inc(self.crawler.stats, "replay/served")
        request.meta[SNAPSHOT] = with_flags(snapshot, fromCache=True)
        return _response(request, snapshot, body)


def _response(request: Request, snapshot: Snapshot, body: bytes | None = None) -> Response:
    """``body``: the text's UTF-8 bytes, when the reader has encoded them already."""
    content_type = snapshot["contentType"]
    status = snapshot["status"]
    # The spider reads the snapshot from meta; the Response's status only has to
    # keep the redirect and retry middlewares out of the way.
    if not isinstance(status, int) or not 200 <= status < 300:
        status = 200
    headers: dict[str, Any] = {"Content-Type": _CONTENT_TYPES.get(content_type, "text/plain")}
    if "xRobotsTag" in snapshot:  # the capture's, so meta robots are judged the same way
        headers["X-Robots-Tag"] = list(snapshot["xRobotsTag"])
    kwargs: dict[str, Any] = {
        "status": status,
        "headers": headers,
        "request": request,
        "flags": ["replay"],
    }
    url = snapshot["url"] if ":" in snapshot["url"] else request.url
    if content_type in BINARY_TYPES or "bodyBytes" in snapshot:
        return Response(url, body=bytes(snapshot.get("bodyBytes", b"")), **kwargs)
    if body is None:
        body = snapshot["body"].encode("utf-8", "surrogatepass")
    cls = HtmlResponse if content_type == "html" else TextResponse
    return cls(url, body=body, encoding="utf-8", **kwargs)
