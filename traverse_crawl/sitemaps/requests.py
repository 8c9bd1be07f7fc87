"""Sitemap discovery, the Scrapy side: requests, responses, snapshots (docs/architecture.md).

Each seed's ``SitemapWalk`` decides what to read; this module turns its fetches into
``WhatwgRequest``s yielded by the spider, so each file passes the egress guard,
robots.txt, retries, redirects and its origin's politeness slot like a page without
being one. Capture stores each file read as a ``text`` snapshot under its own id
(``sitemap_id``), and the parse always reads that snapshot's text, so a replay reads
the same text and admits the same URLs with no network.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.gz import gunzip
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.exceptions import fetch_error_from_failure
from traverse_crawl.fetch.request import WhatwgRequest
from traverse_crawl.meta_keys import REDIRECTS, SEED, SITEMAP, SITEMAP_ID, SNAPSHOT
from traverse_crawl.sitemaps.parse import parse_sitemap
from traverse_crawl.sitemaps.walk import SitemapWalk
from traverse_crawl.snapshots.model import Snapshot, build_snapshot
from traverse_crawl.snapshots.store import open_snapshot_store
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"


def sitemap_id(seed_id: str, url: str) -> str:
    """The store id of a sitemap file read for a seed (never a page id: no page
    URL starts with ``sitemap::``)."""
    return urls.page_id(seed_id, "sitemap::" + url)


class SitemapReader:
    """Every seed's walk; builds its requests and reads its responses."""

    def __init__(
        self,
        crawler: Crawler,
        config: TraverseConfig,
        callback: Callable[..., Any],
        errback: Callable[[Failure], Any],
    ) -> None:
        self.crawler = crawler
        self.mode = config.sitemaps
        self.download_timeout = config.download_timeout
        self.download_maxsize = config.download_maxsize
        self.store = (
            open_snapshot_store(config.store, crawler.settings)
            if config.mode == "capture"
            else None
        )
        self.callback = callback
        self.errback = errback
        self.walks: dict[int, SitemapWalk] = {}
        self.seed_ids: dict[int, str] = {}

    def start(self, key: int, frontier: Frontier) -> Request | None:
        """The seed's first sitemap request (its robots.txt), or None when off."""
        mode = self.mode
        if mode == "off" or not frontier.expect_sitemaps():
            return None
        self.walks[key] = SitemapWalk(frontier.seed_origin, mode, frontier.max_pages)
        self.seed_ids[key] = frontier.seed_id
        return self.next_request(key)

    def next_request(self, key: int) -> Request | None:
        """The walk's next file, or None when it is over (then see ``result``)."""
        walk = self.walks[key]
        fetch = walk.next_fetch()
        if fetch is None:
            return None
        walk.start(fetch)
        origin = urls.origin(fetch.url)
        meta: dict[str, Any] = {
            SEED: key,
            SITEMAP: fetch.kind,
            SITEMAP_ID: sitemap_id(self.seed_ids[key], fetch.url),
            "handle_httpstatus_all": True,
            "download_slot": origin,
        }
        if fetch.kind == "robots":
            # Answered from the robots middleware's single load of the file.
            meta.update(dont_retry=True, dont_redirect=True, download_slot="robots " + origin)
        # Requested exactly as the walk resolved it (fetch/request.py).
        return WhatwgRequest(
            fetch.url,
            callback=self.callback,
            errback=self.errback,
            dont_filter=True,
            meta=meta,
        )

    def step(self, key: int, frontier: Frontier) -> Request | None:
        """The seed's next sitemap file; once there is none, None, and the URLs the walk
        found (with its warnings) are given to the seed's frontier."""
        request = self.next_request(key)
        if request is None:
            frontier.add_sitemap_urls(*self.result(key))
        return request

    def result(self, key: int) -> tuple[list[str], list[str]]:
        walk = self.walks[key]
        return walk.urls, walk.warnings

    # -- outcomes --------------------------------------------------------------

    async def read(self, response: Response) -> None:
        """Hand a response to its walk: robots.txt's text, or a sitemap document."""
        walk = self.walks[response.meta[SEED]]
        try:
            await self._read(response, walk)
        except Exception as exc:  # a bug must not leave the seed waiting for its sitemaps
            logger.exception("unexpected error while reading sitemap %s", response.url)
            inc(self.crawler.stats, "sitemap/error")
            walk.give_up(f"unexpected error while reading it: {exc}")

    async def _read(self, response: Response, walk: SitemapWalk) -> None:
        meta = response.meta
        robots = meta[SITEMAP] == "robots"
        snapshot: Snapshot | None = meta.get(SNAPSHOT)  # replay
        if snapshot is None:
            if not 200 <= response.status < 300:
                if robots:
                    walk.robots_read(None)
                else:
                    self._failed(walk, f"HTTP {response.status}", response.status in (404, 410))
                return
            try:
                snapshot = self._snapshot(response)
            except Exception as exc:  # gzip that cannot be read, or too large once inflated
                self._failed(walk, f"cannot decompress the gzip body ({exc})")
                return
            if self.store is not None:
                await self._store(snapshot, walk)
        if robots:
            walk.robots_read(snapshot["body"])
            return
        before = len(walk.warnings)
        added = walk.sitemap_read(parse_sitemap(snapshot["body"]), snapshot["url"])
        inc(self.crawler.stats, "sitemap/fetched")
        if added:
            inc(self.crawler.stats, "sitemap/urls", added)
        if len(walk.warnings) > before:
            inc(self.crawler.stats, "sitemap/error")

    def failed(self, failure: Failure) -> None:
        request = failure.request  # type: ignore[attr-defined]
        walk = self.walks[request.meta[SEED]]
        error = fetch_error_from_failure(
            failure, request, self.download_timeout, self.download_maxsize
        )
        logger.debug("sitemap request %s failed: %s", request.url, error.message)
        if request.meta[SITEMAP] == "robots":
            walk.robots_read(None)
        else:
            self._failed(walk, error.message, error.kind == "no-snapshot")

    def _failed(self, walk: SitemapWalk, reason: str, not_found: bool = False) -> None:
        before = len(walk.warnings)
        walk.sitemap_failed(reason, not_found)
        if len(walk.warnings) > before:
            inc(self.crawler.stats, "sitemap/error")

    # A body that starts with gzip's magic bytes is un-gzipped whatever the headers say
    # (Scrapy's ``gunzip``, bounded by DOWNLOAD_MAXSIZE); the text is decoded as pages
    # are (BOM, header charset, XML declaration, UTF-8).
    def _snapshot(self, response: Response) -> Snapshot:
        meta = response.meta
        body = response.body
        if body.startswith(GZIP_MAGIC):
            body = gunzip(body, max_size=self.download_maxsize)
        header = response.headers.get(b"Content-Type")
        return build_snapshot(
            source_id=meta[SITEMAP_ID],
            url=response.url,
            status=response.status,
            content_type="text",
            raw_body=body,
            content_type_header=header.decode("latin-1") if header else None,
            redirects=meta.get(REDIRECTS),
        )

    async def _store(self, snapshot: Snapshot, walk: SitemapWalk) -> None:
        assert self.store is not None
        try:
            await maybe_deferred_to_future(deferToThread(self.store.put, snapshot))
        except Exception as exc:  # the I/O edge: the sitemap is still read
            logger.warning("could not store sitemap %s: %s", snapshot["url"], exc)
            walk.note(f"store.put failed ({exc}); read, but not kept for replay")
        else:
            inc(self.crawler.stats, "sitemap/stored")
