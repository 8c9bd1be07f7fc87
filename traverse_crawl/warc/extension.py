"""Write every HTTP exchange of a capture to WARC files (docs/web-archives.md).

Enabled in ``capture`` mode when ``TRAVERSE_WARC_DIR`` is set. The records come from
Scrapy's ``response_downloaded`` signal, sent before any downloader middleware's
``process_response``: the payload as received, before content decoding, and the
request the handler sent, so robots.txt, redirect hops and retries are written too.
The reactor thread only takes what a record needs and hands it to one writer
process over a pipe (``warc/writer.py``); a failed write never stops the crawl.
A page's ``metadata`` record follows once its item has passed the pipelines, or,
for a request that is not a frontier page, once its response reaches the spider.
"""

from __future__ import annotations

import itertools
import logging
import time
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.meta_keys import (
    PAGE_ID,
    REVALIDATE_PRIOR,
    REVALIDATE_SENT,
    SEED,
    SNAPSHOT,
    WARC_NAVIGATION,
)
from traverse_crawl.signals import page_captured
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.stats import inc
from traverse_crawl.storage.bucket import BucketLocation
from traverse_crawl.storage.location import open_location
from traverse_crawl.version import __version__
from traverse_crawl.warc import records as warc
from traverse_crawl.warc.digests import migrate
from traverse_crawl.warc.export import metadata_fields
from traverse_crawl.warc.writer import Exchange, Metadata, RawHeaders, WriterProcess

logger = logging.getLogger(__name__)

# The warcinfo record names the settings that decide what a crawl fetches.
_INFO_SETTINGS = (
    "TRAVERSE_MAX_PAGES",
    "TRAVERSE_MAX_DEPTH",
    "TRAVERSE_MIN_DELAY",
    "TRAVERSE_ROBOTS_POLICY",
    "TRAVERSE_REVALIDATE",
    "TRAVERSE_RENDER",
    "ROBOTSTXT_OBEY",
    "USER_AGENT",
)


def _raw(headers: warc.Headers) -> RawHeaders:
    """A rendered page's navigation headers in the shape of Scrapy's ``Headers.items()``."""
    return [(name.encode("latin-1"), [value.encode("latin-1")]) for name, value in headers]


class WarcWriterExtension:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "capture" or not config.warc_dir:
            raise NotConfigured
        self.crawler = crawler
        self.directory = config.warc_dir
        info = {name: crawler.settings.get(name) for name in _INFO_SETTINGS}
        software = f"traverse_crawl/{__version__} (Scrapy, warcio)"
        buckets = {
            key: location.describe()
            for key, name, path in (("warc", "TRAVERSE_WARC_DIR", config.warc_dir),
                                    ("store", "TRAVERSE_STORE", config.store))
            if isinstance(location := open_location(name, path, crawler.settings), BucketLocation)
        }  # fmt: skip
        if "warc" in buckets:  # once, at start: a missing bucket is exit 2
            BucketLocation.from_description(buckets["warc"]).check("TRAVERSE_WARC_DIR")
        try:
            moved = None if buckets else migrate(config.warc_dir, config.store)
        except OSError as exc:  # the writer still reads it where it is
            logger.warning("could not move the payload digests out of %s: %s", config.warc_dir, exc)
        else:
            if moved:
                logger.info("moved %s into TRAVERSE_STORE %s", moved, config.store)
        self.writer = WriterProcess(
            config.warc_dir,
            "traverse",
            config.warc_max_size,
            warc.info_fields(software, info),
            config.store,
            buckets,
        )
        self.keys = itertools.count()
        self.last_response: dict[str, tuple[int, str]] = {}  # page id -> exchange key, URL
        self.lost = 0  # jobs the writer was gone for
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.page_captured, signal=page_captured)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        logger.info("writing WARC files to %s", config.warc_dir)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcWriterExtension:
        return cls(crawler)

    # -- exchanges -----------------------------------------------------------

    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        # Here, in the reactor thread, only what the writer process needs is taken;
        # building, hashing and compressing the records happens there.
        meta = request.meta
        status, body, url = response.status, response.body, response.url
        headers: RawHeaders = list(response.headers.items())
        if "playwright" in response.flags:
            navigation = meta.pop(WARC_NAVIGATION, None)
            if not navigation:
                return  # nothing the browser received for the page itself to write
            status, body = navigation["status"], navigation["body"]
            headers, url = _raw(navigation["headers"]), navigation.get("url", url)
        prior = meta.get(REVALIDATE_PRIOR)
        revisit = status == 304 and prior is not None and meta.get(REVALIDATE_SENT) == request.url
        inc(self.crawler.stats, "warc/revisits" if revisit else "warc/responses")
        key = next(self.keys)
        page_id = meta.get(PAGE_ID)
        page = page_id if isinstance(page_id, str) else ""
        earlier = self.last_response.get(page) if page else None
        self._send(
            Exchange(
                key,
                time.time(),
                url,
                status,
                getattr(response, "protocol", None) or "HTTP/1.1",
                headers,
                body,
                bool({"download_stopped", "dataloss"} & set(response.flags)),
                request.method,
                list(request.headers.items()),
                request.body,
                prior if revisit else None,
                bool(page),
                earlier[0] if earlier else None,
            )
        )
        if page:
            self.last_response[page] = (key, url)

    def response_received(self, response: Response, request: Request, **kwargs: Any) -> None:
        """A navigation Chromium received but did not render (a redirect, an error
        status, a PDF): handed back to Scrapy by the render middleware, never
        downloaded by Scrapy, so ``response_downloaded`` did not see it."""
        meta = request.meta
        if WARC_NAVIGATION in meta and "playwright" not in response.flags:
            flagged = response.replace(flags=[*response.flags, "playwright"])
            self.response_downloaded(flagged, request, **kwargs)
        if SEED not in meta and not (200 <= response.status < 300 or SNAPSHOT in meta):
            self.page_captured(response, None, None, meta=meta)  # it will have no snapshot

    def page_captured(
        self,
        response: Response,
        snapshot: Snapshot | None,
        source_ref: str | None,
        meta: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        """The metadata record of a page that is not a frontier page (any spider's)."""
        page_id = (response.meta if meta is None else meta).get(PAGE_ID)
        if page_id not in self.last_response:
            return
        key, url = self.last_response.pop(page_id)
        fields: dict[str, Any] = {"pageId": page_id}
        if snapshot is not None and source_ref:
            fields = metadata_fields(snapshot, source_ref)
            fields["pageId"] = page_id
        else:
            fields["error"] = "http-error"  # a final response without a snapshot
        inc(self.crawler.stats, "warc/metadata")
        self._send(Metadata(key, time.time(), url, fields, source_ref or ""))

    def item_scraped(self, item: Any, **_: Any) -> None:
        page_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(page_id, str) or page_id not in self.last_response:
            return
        key, url = self.last_response.pop(page_id)
        fetch = item.get("fetch") or {}
        source_ref = item.get("sourceRef") or ""
        fields: dict[str, Any] = {"pageId": page_id}
        if fetch.get("snapshot") and source_ref:
            fields = metadata_fields(fetch["snapshot"], source_ref)
            fields["pageId"] = page_id  # the page's id; a 304's prior may be another hop's
        else:
            fields["error"] = (fetch.get("error") or {}).get("kind")
        inc(self.crawler.stats, "warc/metadata")
        self._send(Metadata(key, time.time(), url, fields, source_ref))

    def _send(self, job: Exchange | Metadata) -> None:
        if not self.writer.send(job):
            self.lost += 1
            if self.lost == 1:
                logger.warning("the WARC writer process is gone: records not written")

    def spider_closed(self, **_: Any) -> None:
        summary = self.writer.close()
        stats = self.crawler.stats
        for key, count in (
            ("warc/records", summary.records),
            ("warc/files", summary.files),
            ("warc/write_failed", summary.failures + self.lost),
        ):
            if count:
                inc(stats, key, count)
        if summary.error:
            logger.warning("%s (%d failed writes)", summary.error, summary.failures)
        logger.info(
            "WARC: %d file(s) written to %s (writer process: %.2f s of CPU)",
            summary.files,
            self.directory,
            summary.cpu_s,
        )
