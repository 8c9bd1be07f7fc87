"""Each page response's snapshot and ``sourceRef``, for any spider (docs/snapshots.md).

``PageIdMiddleware`` gives every request that is not a frontier page its page id (its
URL, and its method, body, content headers and count of earlier requests of the same
kind: ``snapshots/request_key.py``) as it is scheduled, in the order the spider asked, or
as a downloader middleware next to the engine for a request that was never scheduled,
before the replay and revalidate middlewares read it. ``CaptureMiddleware``, the spider
middleware next to the spider, builds the snapshot of each 2xx response before its
callback runs (``traverse_snapshot``, ``traverse_source_ref``), hands it to the writer at
once in ``capture`` mode, and puts the ``sourceRef`` on the items the callback yields
(``snapshots/item_source.py``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Headers, Response

from traverse_crawl.config.settings import TraverseConfig, get_config
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.attempt import ATTEMPT_KEYS
from traverse_crawl.fetch.content import resolve_content_type
from traverse_crawl.meta_keys import (
    HINT,
    PAGE_ID,
    REDIRECTS,
    REPLAY_WORK,
    ROBOTS,
    ROBOTS_META,
    SEED,
    SITEMAP_ID,
    SNAPSHOT,
    SNAPSHOT_WRITE,
    SOURCE_REF,
)
from traverse_crawl.politeness.robots_meta import RobotsMeta, bot_token, robots_meta
from traverse_crawl.signals import page_captured
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.capture import Capture, capture_of, request_page_id
from traverse_crawl.snapshots.item_source import SourceRefField
from traverse_crawl.snapshots.request_key import (
    Occurrences,
    key_header_names,
    occurrence_suffix,
    variant,
)
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

# What belongs to one page's response, never to a request made from it.
_PAGE_KEYS = ATTEMPT_KEYS | {PAGE_ID, SOURCE_REF, SNAPSHOT_WRITE, REDIRECTS, ROBOTS_META}


class PageIdMiddleware:
    """The page id of every request that is not a frontier page."""

    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.crawler = crawler
        self.source_id = config.source_id  # "": the spider's name, taken later
        self.header_names = key_header_names(config.request_key_headers)
        defaults = Headers(crawler.settings.getdict("DEFAULT_REQUEST_HEADERS"))
        self.defaults = {name: _joined(defaults, name) for name in self.header_names}
        self.occurrences = Occurrences()
        # At scheduling, not at download: requests are scheduled in the order the spider
        # yields them, while the order they leave the scheduler depends on timing, so
        # the Nth duplicate is the same request in a capture and in its replay.
        crawler.signals.connect(self._scheduled, signal=signals.request_scheduled)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageIdMiddleware:
        return cls(crawler)

    def _scheduled(self, request: Request) -> None:
        self._assign(request, counted=True)

    def process_request(self, request: Request) -> None:
        self._assign(request, counted=False)  # never scheduled (``engine.download``)

    def _assign(self, request: Request, counted: bool) -> None:
        meta = request.meta
        # robots.txt and sitemap files are not pages: no page id, nothing captured.
        # A retry or a redirect keeps the page id of the request it continues.
        if PAGE_ID in meta or ROBOTS in meta or SITEMAP_ID in meta:
            return
        if not self.source_id:
            spider = self.crawler.spider
            self.source_id = str(getattr(spider, "name", None) or "spider")
        page_id = request_page_id(self.source_id, request.url)
        if page_id is None:
            return
        headers = {name: _joined(request.headers, name) for name in self.header_names}
        page_id += variant(request.method, request.body, headers, self.defaults)
        if counted:
            page_id += occurrence_suffix(self.occurrences.next(page_id))
        meta[PAGE_ID] = page_id


def _joined(headers: Headers, name: str) -> bytes | None:
    """A header's values as one (``a, b``), or None when it is not set."""
    values = headers.getlist(name)
    return b", ".join(values) if values else None


class CaptureMiddleware:
    """Spider side: each page response's snapshot, and its ``sourceRef`` on the items."""

    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.crawler = crawler
        self.items = SourceRefField(config.item_source_field)
        self.capture: Capture | None = None
        # TRAVERSE_ROBOTS_META=obey: the bot's token; None: meta robots are not read.
        self.token = bot_token(config.user_agent) if config.robots_meta == "obey" else None
        if config.mode == "capture":
            self.capture = capture_of(crawler, config.store)
            crawler.signals.connect(self._opened, signal=signals.spider_opened)
            crawler.signals.connect(self._closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CaptureMiddleware:
        return cls(crawler)

    def _opened(self) -> None:
        assert self.capture is not None
        self.capture.open()

    async def _closed(self) -> None:
        assert self.capture is not None
        await self.capture.close()  # the snapshot pipeline, when enabled, has closed it already

    def process_spider_input(self, response: Response) -> None:
        meta = response.meta
        if SEED not in meta and isinstance(meta.get(PAGE_ID), str):
            self._capture(response, meta)  # before the callback: it may read the sourceRef

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        meta = response.meta
        page_id = meta.get(PAGE_ID)
        if SEED in meta and isinstance(page_id, str):
            # A frontier page: captured here, before the traverse spider's parse (an async
            # generator) starts, and after Scrapy has let pending I/O run, so the download
            # place this response freed is refilled before the page's decoding and hashing.
            self._capture(response, meta)
        ref = meta.get(SOURCE_REF)
        async for out in result:
            if isinstance(out, Request):
                # A request given the response's meta (``meta=response.meta``) gets its own page.
                if page_id is not None and out.meta.get(PAGE_ID) is page_id:
                    for key in _PAGE_KEYS:
                        out.meta.pop(key, None)
            elif ref is not None and not isinstance(out, PageItem):
                self.items.set(out, ref)
            yield out

    def _capture(self, response: Response, meta: dict[str, Any]) -> None:
        """The response's snapshot and sourceRef into its meta; stored in capture mode."""
        snapshot: snap.Snapshot | None = meta.get(SNAPSHOT)
        if snapshot is None and 200 <= response.status < 300:
            try:
                built = snapshot_of(response)
            except Exception:  # a bug; the traverse spider records it as the page's error
                if SEED not in meta:
                    logger.exception("could not build the snapshot of %s", response.url)
                return
            assert not isinstance(built, FetchError)
            snapshot = meta[SNAPSHOT] = built
        if snapshot is not None and self.token is not None:
            verdict = meta[ROBOTS_META] = page_robots_meta(response, snapshot, self.token)
            if verdict.noarchive is not None:  # judged before anything is stored
                inc(self.crawler.stats, "robots_meta/noarchive")
                snapshot = None
            elif "xRobotsTag" not in snapshot and (tags := header_values(response.headers)):
                snapshot["xRobotsTag"] = tags  # kept for replay, which has no headers
        ref: str | None = None
        if snapshot is not None:
            ref = meta[SOURCE_REF] = source_ref_of(snapshot, meta)
            if self.capture is not None:
                meta[SNAPSHOT_WRITE] = self.capture.submit(snapshot, ref)
        if SEED not in meta:  # the WARC record of a page that is not a frontier page
            self.crawler.signals.send_catch_log(
                page_captured, response=response, snapshot=snapshot, source_ref=ref
            )


def source_ref_of(snapshot: snap.Snapshot, meta: dict[str, Any]) -> str:
    """The snapshot's sourceRef (replay's reader has built it already)."""
    work = meta.get(REPLAY_WORK)
    return build_source_ref(snapshot) if work is None else str(work.source_ref)


def page_verdict(
    response: Response, snapshot: snap.Snapshot, config: TraverseConfig
) -> RobotsMeta | None:
    """With TRAVERSE_ROBOTS_META=obey, a page's verdict: the capture middleware's, in the
    response's meta; else (a project that removed that middleware) judged now, and kept
    there. None with the default ``ignore``."""
    meta = response.meta
    verdict: RobotsMeta | None = meta.get(ROBOTS_META)
    if verdict is None and config.robots_meta == "obey":
        token = bot_token(config.user_agent)
        verdict = meta[ROBOTS_META] = page_robots_meta(response, snapshot, token)
    return verdict


def page_robots_meta(response: Response, snapshot: snap.Snapshot, token: str) -> RobotsMeta:
    """The meta robots verdict of a page response about to be captured: its
    ``X-Robots-Tag`` headers and, for an HTML page, its head (a revalidated 304's:
    the stored body's). The WARC writer judges the response it writes the same way."""
    body: bytes | None = None
    if snapshot["contentType"] == "html":
        body = response.body
        if response.status == 304 and isinstance(snapshot.get("body"), str):
            body = snapshot["body"].encode("utf-8", "replace")
    return robots_meta(header_values(response.headers), body, token)


def header_values(headers: Headers) -> list[str]:
    """The ``X-Robots-Tag`` header values, each as sent."""
    return [value.decode("latin-1") for value in headers.getlist(b"X-Robots-Tag")]


def snapshot_of(response: Response) -> snap.Snapshot | FetchError:
    """The snapshot of a final response, or its ``http-error``: a status that is not
    2xx, or a 304 that no stored snapshot's validators asked for."""
    status = response.status
    if status == 304:
        return FetchError(
            "http-error",
            f"unexpected 304 Not Modified from {response.url} without validators "
            "from a matching prior snapshot",
            304,
        )
    if not 200 <= status < 300:
        return FetchError("http-error", f"HTTP {status} from {response.url}", status)
    meta = response.meta
    header = _header(response, b"Content-Type")
    # A rendered page is the browser's DOM serialised as UTF-8 HTML (docs/rendering.md).
    rendered = "playwright" in response.flags
    if rendered:
        header = "text/html; charset=utf-8"
    return snap.build_snapshot(
        source_id=meta[PAGE_ID],
        url=response.url,
        status=status,
        content_type="html" if rendered else resolve_content_type(header, meta.get(HINT)),
        raw_body=response.body,
        content_type_header=header,
        redirects=meta.get(REDIRECTS),
        etag=_header(response, b"ETag"),
        last_modified=_header(response, b"Last-Modified"),
        rendered=rendered,
    )


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    if not value:
        return None
    return value.decode("latin-1")
