"""The snapshot of every final response, for any spider (docs/snapshots.md).

Next to the engine, it sees each request first and each response last (after redirects,
retries, revalidation, rendering, replay). A request that is not a frontier page gets its
page id; a 2xx response its snapshot (``traverse_snapshot``) and ``sourceRef``
(``traverse_source_ref``); in ``capture`` mode the snapshot goes to the writer at once.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.meta_keys import (
    HINT,
    PAGE_ID,
    REDIRECTS,
    REPLAY_WORK,
    ROBOTS,
    SITEMAP_ID,
    SNAPSHOT,
    SNAPSHOT_WRITE,
    SOURCE_REF,
)
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.capture import Capture, capture_of, request_page_id
from traverse_crawl.snapshots.source_ref import build_source_ref


class CaptureMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.crawler = crawler
        self.source_id = config.source_id  # "": the spider's name, read at the first request
        self.capture: Capture | None = None
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

    def process_request(self, request: Request) -> None:
        meta = request.meta
        # robots.txt and sitemap files are not pages: no page id, nothing captured.
        if PAGE_ID in meta or ROBOTS in meta or SITEMAP_ID in meta:
            return
        if not self.source_id:
            spider = self.crawler.spider
            self.source_id = str(getattr(spider, "name", None) or "spider")
        page_id = request_page_id(self.source_id, request.url)
        if page_id is not None:
            meta[PAGE_ID] = page_id

    def process_response(self, request: Request, response: Response) -> Response:
        meta = request.meta
        page_id = meta.get(PAGE_ID)
        if not isinstance(page_id, str):
            return response
        snapshot: snap.Snapshot | None = meta.get(SNAPSHOT)
        if snapshot is None:
            if not 200 <= response.status < 300:
                return response  # no snapshot: the page's error is its status
            try:
                built = snapshot_of(response, meta)
            except Exception:  # a bug: the spider's own reading of the response reports it
                return response
            assert not isinstance(built, FetchError)
            snapshot = meta[SNAPSHOT] = built
        work = meta.get(REPLAY_WORK)  # replay's reader has built the sourceRef already
        ref = meta[SOURCE_REF] = build_source_ref(snapshot) if work is None else work.source_ref
        if self.capture is not None:
            meta[SNAPSHOT_WRITE] = self.capture.submit(snapshot, ref)
        return response


def snapshot_of(
    response: Response, meta: dict[str, Any] | None = None
) -> snap.Snapshot | FetchError:
    """The snapshot of a final response, or its ``http-error``: a status that is not
    2xx, or a 304 that no stored snapshot's validators asked for. ``meta``: its
    request's (in the downloader a response is not tied to its request yet)."""
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
    if meta is None:
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
        content_type="html" if rendered else snap.resolve_content_type(header, meta.get(HINT)),
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
