"""Write every HTTP exchange of a capture to WARC files (CONTRACT §8).

Enabled in ``capture`` mode when ``TRAVERSE_WARC_DIR`` is set; files roll at
``TRAVERSE_WARC_MAX_SIZE`` bytes (``core.warc``). The records come from
Scrapy's ``response_downloaded`` signal, sent by the downloader as soon as a
download handler returns and before any downloader middleware's
``process_response``: the body is the payload as received (HTTP/1.1 chunking
removed by Twisted, ``Content-Encoding`` not yet decoded by
HttpCompressionMiddleware), and the request is the one the handler sent. So
every request that got a response is written, robots.txt, redirect hops and
retries included:

- a ``request`` record (``WARC-Concurrent-To`` its response) and a ``response``
  record; a download cut short (robots.txt past 500 KiB) is ``WARC-Truncated``;
- a 304 to a conditional GET that carried the stored snapshot's validators is a
  ``revisit`` record (profile server-not-modified) referring to the earlier
  capture's response (``core.warcdigests``);
- a rendered page (flag ``playwright``) is the response received for the
  page's own navigation, before decoding (meta ``traverse_warc_navigation``,
  set by the page guard), not the serialised DOM; a navigation handed back to Scrapy
  unrendered (a redirect, an error status, a PDF) is written from the same
  meta key when the ``response_received`` signal brings it;
- after each page's last response, once its item has passed the pipelines, a
  ``metadata`` record with the page id, ``sourceRef``, SHA-256 ``bodyHash``,
  ``fetchedAt``, content type, status, redirects, validators (or the error
  kind): the fields ``scrapy warc import`` restores.

The reactor thread only takes what a record needs (record id, date, headers,
body); one writer thread builds, hashes, compresses and appends the records,
in order (zlib and hashlib release the GIL while they work). Files are
closed and renamed when the spider closes, also after a SIGTERM
(Scrapy's graceful shutdown). A write that fails (disk full) is logged once,
counted, and never stops the crawl.

Meta keys: ``traverse_page_id``, ``traverse_revalidate_sent``,
``traverse_revalidate_prior`` (read), ``traverse_warc_navigation`` (read).
Stats: ``warc/records``, ``warc/responses``, ``warc/revisits``,
``warc/metadata``, ``warc/files``, ``warc/write_failed``.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from warcio.recordloader import ArcWarcRecord

from traverse_crawl import __version__
from traverse_crawl.core import warc
from traverse_crawl.core.attempt import REVALIDATE_SENT as SENT
from traverse_crawl.core.config import get_config
from traverse_crawl.core.sourceref import build_source_ref
from traverse_crawl.core.warcdigests import DigestIndex
from traverse_crawl.core.warcexport import metadata_fields
from traverse_crawl.downloadermiddlewares.revalidate import PRIOR
from traverse_crawl.stats import inc

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


class Exchange(NamedTuple):
    """One download, as taken in the reactor thread for the writer thread."""

    record_id: str
    date: str
    url: str
    status: int
    protocol: str
    headers: warc.Headers
    body: bytes
    truncated: bool
    method: str
    request_headers: warc.Headers
    request_body: bytes
    prior: dict[str, Any] | None  # the stored snapshot a 304 revalidated


def _headers(headers: Any) -> warc.Headers:
    """Scrapy's Headers as (name, value) pairs, in Scrapy's order and casing."""
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        for value in values
    ]


class WarcWriterExtension:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode != "capture" or not config.warc_dir:
            raise NotConfigured
        self.crawler = crawler
        info = {name: crawler.settings.get(name) for name in _INFO_SETTINGS}
        software = f"traverse_crawl/{__version__} (Scrapy, warcio)"
        self.files = warc.RollingWarcFiles(
            config.warc_dir, "traverse", config.warc_max_size, warc.info_fields(software, info)
        )
        self.digests = DigestIndex(config.warc_dir)
        self.last_response: dict[str, tuple[str, str]] = {}  # page id -> record id, URL
        self.responses: dict[str, warc.Written] = {}  # writer thread only
        self.failures = 0
        # One writer thread keeps the records in order; zlib and hashlib release
        # the GIL, so compression overlaps the crawl (docs/performance.md).
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warc-writer")
        crawler.signals.connect(self.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self.response_received, signal=signals.response_received)
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        logger.info("writing WARC files to %s", config.warc_dir)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcWriterExtension:
        return cls(crawler)

    # -- exchanges -----------------------------------------------------------

    def response_downloaded(self, response: Response, request: Request, **_: Any) -> None:
        # Here, in the reactor thread, only what the writer thread needs is taken;
        # building, hashing and compressing the records happens there.
        meta = request.meta
        status, headers, body = response.status, _headers(response.headers), response.body
        url = response.url
        if "playwright" in response.flags:
            navigation = meta.pop(warc.NAVIGATION, None)
            if not navigation:
                return  # nothing the browser received for the page itself to write
            status, headers, body = navigation["status"], navigation["headers"], navigation["body"]
            url = navigation.get("url", url)
        prior = meta.get(PRIOR)
        revisit = status == 304 and prior is not None and meta.get(SENT) == request.url
        self._inc("warc/revisits" if revisit else "warc/responses")
        exchange = Exchange(
            warc.new_record_id(),
            warc.warc_date(),
            url,
            status,
            getattr(response, "protocol", None) or "HTTP/1.1",
            headers,
            body,
            bool({"download_stopped", "dataloss"} & set(response.flags)),
            request.method,
            _headers(request.headers),
            request.body,
            prior if revisit else None,
        )
        self.writer.submit(self._write_exchange, exchange)
        page_id = meta.get("traverse_page_id")
        if isinstance(page_id, str):
            self.last_response[page_id] = (exchange.record_id, url)

    def response_received(self, response: Response, request: Request, **kwargs: Any) -> None:
        """A navigation Chromium received but did not render (a redirect, an error
        status, a PDF): handed back to Scrapy by the render middleware, never
        downloaded by Scrapy, so ``response_downloaded`` did not see it."""
        if warc.NAVIGATION in request.meta and "playwright" not in response.flags:
            flagged = response.replace(flags=[*response.flags, "playwright"])
            self.response_downloaded(flagged, request, **kwargs)

    def item_scraped(self, item: Any, **_: Any) -> None:
        page_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(page_id, str) or page_id not in self.last_response:
            return
        record_id, url = self.last_response.pop(page_id)
        fetch = item.get("fetch") or {}
        source_ref = item.get("sourceRef") or ""
        fields: dict[str, Any] = {"pageId": page_id}
        if fetch.get("snapshot") and source_ref:
            fields = metadata_fields(fetch["snapshot"], source_ref)
            fields["pageId"] = page_id  # the page's id; a 304's prior may be another hop's
        else:
            fields["error"] = (fetch.get("error") or {}).get("kind")
        self._inc("warc/metadata")
        self.writer.submit(
            self._write_metadata, url, fields, warc.warc_date(), record_id, source_ref
        )

    # -- the writer thread ---------------------------------------------------

    def _write_exchange(self, x: Exchange) -> None:
        extra = {"WARC-Record-ID": x.record_id}
        if x.prior is not None:
            earlier = self.digests.earlier(build_source_ref(x.prior), x.prior)
            record = warc.revisit_record(
                x.url, x.status, x.protocol, x.headers, x.date, earlier, extra
            )
        else:
            record = warc.response_record(
                x.url, x.status, x.protocol, x.headers, x.body, x.date, extra
            )
            if x.truncated:
                record.rec_headers.add_header("WARC-Truncated", "length")
            self.responses[x.record_id] = warc.written(record)
        sent = warc.request_record(
            x.url, x.method, x.request_headers, x.request_body, x.date, x.record_id
        )
        self._write_now(sent, record)

    def _write_metadata(
        self, url: str, fields: dict[str, Any], date: str, refers_to: str, source_ref: str
    ) -> None:
        self._write_now(warc.metadata_record(url, fields, date, refers_to))
        response = self.responses.pop(refers_to, None)
        if source_ref and response is not None:
            self.digests.add(source_ref, response)

    def _write_now(self, *records: ArcWarcRecord) -> bool:
        before = len(self.files.closed_files)
        try:
            self.files.write(*records)
        except Exception as exc:  # the I/O edge: the crawl goes on without this record
            self.failures += 1
            log = logger.warning if self.failures == 1 else logger.debug
            log("WARC write to %s failed: %s", self.files.directory, exc)
            self._inc("warc/write_failed")
            return False
        self._inc("warc/records", len(records))
        self._inc("warc/files", len(self.files.closed_files) - before)
        return True

    def spider_closed(self, **_: Any) -> None:
        self.writer.shutdown(wait=True)
        before = len(self.files.closed_files)
        try:
            self.files.close()
        except OSError as exc:
            logger.warning("WARC file %s could not be closed: %s", self.files.path, exc)
        self.digests.close()
        self._inc("warc/files", len(self.files.closed_files) - before)
        logger.info(
            "WARC: %d file(s) written to %s", len(self.files.closed_files), self.files.directory
        )

    def _inc(self, key: str, count: int = 1) -> None:
        if count:
            inc(self.crawler.stats, key, count)
