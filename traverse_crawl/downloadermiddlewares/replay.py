"""Replay mode: every page from the snapshot store, no network at all (SPEC §13.6, CONTRACT §5).

Enabled only when ``TRAVERSE_MODE`` is ``replay``; reads ``TRAVERSE_STORE``.
At priority 50 it answers every request before any other middleware acts, so
in replay no request reaches a download handler: no DNS look-up, no socket,
no robots.txt, no politeness delay, no browser. The project's middlewares that
only act on a download (egress, robots, retry, redirect, revalidate,
politeness) are not installed in replay at all (``NotConfigured``). A page request (one with
``traverse_page_id``) is answered with its latest snapshot (SPEC §12
``latest``) as a Response flagged ``replay``, and
``request.meta["traverse_snapshot"]`` is that snapshot with ``fromCache: true``,
which the spider records as it is — same ``fetchedAt``, hash and ``sourceRef``
as when it was captured. The same BFS then runs on the replayed bodies.

A sitemap file (``traverse_sitemap_id``, traverse_crawl.sitemaps) is served the
same way, under its own id.

A page with no snapshot fails alone with ``no-snapshot`` (``no snapshot stored
for sourceId "<page id>"``). A damaged (torn, corrupt) snapshot file is named:
in the ``no-snapshot`` message when no other snapshot of the page is usable,
else in a page warning of the page served from an older snapshot. A store that
cannot be read at all is a ``no-snapshot`` too, with the reason appended
(Traverse lets that exception end the crawl, SPEC §17.7; here a crawl never
dies of a page, CONTRACT §5). Any other request (robots.txt, a stray request
of another component) is refused with ``IgnoreRequest``. A store directory
that does not exist never gets here: the spider records one ``invalid-config``
page per seed instead.

Meta keys: ``traverse_page_id``, ``traverse_sitemap_id`` (read),
``traverse_snapshot`` (set).
Stats: ``replay/served``, ``replay/miss``, ``replay/refused``, ``replay/damaged``.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse, Response, TextResponse

from traverse_crawl.core.attempt import SNAPSHOT
from traverse_crawl.core.config import get_config
from traverse_crawl.core.errors import FetchError
from traverse_crawl.core.snapshot import BINARY_TYPES, MEDIA_TYPES, Snapshot, with_flags
from traverse_crawl.core.store import FilesystemSnapshotStore
from traverse_crawl.exceptions import PageFailed
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

# A Content-Type that resolves back to the stored type (SPEC §9), for callbacks
# that look at the Response rather than at the snapshot.
_CONTENT_TYPES = MEDIA_TYPES


class ReplayMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "replay":
            raise NotConfigured  # only replay serves from the store
        self.crawler = crawler
        self.store = FilesystemSnapshotStore(config.store)
        logger.info("replay mode: every page is served from %s, no network", self.store.root)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReplayMiddleware:
        return cls(crawler)

    def process_request(self, request: Request) -> Response:
        page_id = request.meta.get("traverse_page_id") or request.meta.get("traverse_sitemap_id")
        if not isinstance(page_id, str):
            inc(self.crawler.stats, "replay/refused")
            raise IgnoreRequest(f"replay mode makes no network request: {request.url}")
        message = f'no snapshot stored for sourceId "{page_id}"'
        damaged: list[str] = []
        try:
            # Read in the reactor thread: replay has no network I/O to overlap
            # with, and a thread-pool hop per page costs more than the read.
            snapshot = self.store.latest(page_id, damaged)
        except Exception as exc:  # the I/O edge: the page fails, the crawl goes on
            logger.warning("replay: cannot read the store for %r: %s", page_id, exc)
            snapshot, message = None, f"{message} (store read failed: {exc})"
        if damaged:
            inc(self.crawler.stats, "replay/damaged")
        if snapshot is None:
            inc(self.crawler.stats, "replay/miss")
            if damaged:
                message = f'no usable snapshot for sourceId "{page_id}": {"; ".join(damaged)}'
            raise PageFailed(FetchError("no-snapshot", message))
        request.meta.setdefault("traverse_warnings", []).extend(damaged)
        inc(self.crawler.stats, "replay/served")
        request.meta[SNAPSHOT] = with_flags(snapshot, fromCache=True)
        return _response(request, snapshot)


def _response(request: Request, snapshot: Snapshot) -> Response:
    content_type = snapshot["contentType"]
    status = snapshot["status"]
    # The spider reads the snapshot from meta; the Response's status only has to
    # keep the redirect and retry middlewares out of the way.
    if not isinstance(status, int) or not 200 <= status < 300:
        status = 200
    headers: dict[str, Any] = {"Content-Type": _CONTENT_TYPES.get(content_type, "text/plain")}
    kwargs: dict[str, Any] = {
        "status": status,
        "headers": headers,
        "request": request,
        "flags": ["replay"],
    }
    url = snapshot["url"] if ":" in snapshot["url"] else request.url
    if content_type in BINARY_TYPES or "bodyBytes" in snapshot:
        return Response(url, body=bytes(snapshot.get("bodyBytes", b"")), **kwargs)
    body = snapshot["body"].encode("utf-8", "surrogatepass")
    cls = HtmlResponse if content_type == "html" else TextResponse
    return cls(url, body=body, encoding="utf-8", **kwargs)
