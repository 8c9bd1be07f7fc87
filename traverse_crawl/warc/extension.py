"""Write every HTTP exchange of a capture to WARC files (docs/web-archives.md).

Enabled in ``capture`` mode when ``TRAVERSE_WARC_DIR`` is set. The records come from
Scrapy's ``response_downloaded`` signal, sent before any downloader middleware's
``process_response``: the payload as received, before content decoding, and the
request the handler sent, so robots.txt, redirect hops and retries are written too.
The reactor thread only takes what a record needs and hands it to one writer
process over a pipe (``warc/writer.py``, ``warc/writer_child.py``); a failed write
never stops the crawl.
A page's ``metadata`` record follows once its item has passed the pipelines, or,
for a request that is not a frontier page, once its response reaches the spider.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from typing import Any, cast

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from twisted.internet.defer import Deferred

from traverse_crawl.config.settings import get_config
from traverse_crawl.fetch.content import resolve_content_type
from traverse_crawl.meta_keys import (
    HINT,
    PAGE_ID,
    REVALIDATE_PRIOR,
    REVALIDATE_SENT,
    SEED,
    SNAPSHOT,
    WARC_NAVIGATION,
)
from traverse_crawl.politeness.blocking import pushback
from traverse_crawl.politeness.robots_meta import bot_token, decoded_head, robots_meta
from traverse_crawl.signals import page_captured
from traverse_crawl.snapshots.capture_middleware import header_values
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.stats import LOST, inc
from traverse_crawl.storage.bucket import BucketLocation
from traverse_crawl.storage.location import open_location
from traverse_crawl.version import __version__
from traverse_crawl.warc import records as warc
from traverse_crawl.warc.digests import migrate
from traverse_crawl.warc.export import metadata_fields
from traverse_crawl.warc.writer import WarcWriter
from traverse_crawl.warc.writer_child import Exchange, Metadata, RawHeaders, Summary, job_frame

logger = logging.getLogger(__name__)

MAX_PENDING = 4 << 20  # beyond the pipe (utils/child_process.py): the crawl pauses past it
MAX_RESTARTS = 5  # writer processes started after the first, in one crawl

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


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


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
        self.writer_config = {
            "directory": config.warc_dir,
            "prefix": "traverse",
            "max_size": config.warc_max_size,
            "info": warc.info_fields(software, info),
            "pid": os.getpid(),
            "store": config.store if "store" in buckets else os.path.abspath(config.store),
            "buckets": buckets,
        }
        self.stall_timeout = config.warc_stall_timeout
        # TRAVERSE_ROBOTS_META=obey: the bot's token; None: every exchange is written.
        self.token = bot_token(config.user_agent) if config.robots_meta == "obey" else None
        self.blocks = pushback(crawler)  # TRAVERSE_BLOCK_PATTERNS: block pages are not written
        self.loop = asyncio.get_event_loop()
        self.writer: WarcWriter | None = self._start()
        self.restarts = 0
        self.failed_writers = 0  # writers that died or stalled: what they had not written is lost
        self.paused = False
        self.keys = itertools.count()
        self.last_response: dict[str, tuple[int, str]] = {}  # page id -> exchange key, URL
        self.lost = 0  # jobs no writer took
        self.closed = False
        from twisted.internet import reactor  # imported late: importing installs a reactor

        self.reactor: Any = cast(Any, reactor)  # typed as the interface, without self
        self.trigger = self.reactor.addSystemEventTrigger(
            "before", "shutdown", self._reactor_stopping
        )
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
        page_id = meta.get(PAGE_ID)
        page = page_id if isinstance(page_id, str) else ""
        if self.blocks.patterns and self.blocks.judge(request, response) is not None:
            inc(self.crawler.stats, "warc/blocked")
            return  # a block page is never archived, nor any of its exchange
        if self.token is not None and page and (revisit or 200 <= status < 300):
            if self._noarchive(response, meta, prior if revisit else None):
                inc(self.crawler.stats, "warc/noarchive")
                return  # a page that will not be captured leaves no record
        inc(self.crawler.stats, "warc/revisits" if revisit else "warc/responses")
        key = next(self.keys)
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

    def _noarchive(self, response: Response, meta: dict[str, Any], prior: Any) -> bool:
        """Whether meta robots keep this page response out of the capture, judged as the
        capture middleware will judge it (``page_robots_meta``), on the bytes Scrapy will
        decode: the head of the payload with its content coding undone; a rendered page's
        DOM; a revisit's stored body."""
        assert self.token is not None
        body: bytes | None
        if prior is not None:
            text = prior.get("body") if prior.get("contentType") == "html" else None
            body = text.encode("utf-8", "replace") if isinstance(text, str) else None
        elif "playwright" in response.flags:
            body = response.body  # the rendered document
        elif resolve_content_type(_header(response, b"Content-Type"), meta.get(HINT)) == "html":
            body = decoded_head(response.body, _header(response, b"Content-Encoding"))
        else:
            body = None
        verdict = robots_meta(header_values(response.headers), body, self.token)
        return verdict.noarchive is not None

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

    # -- the writer process -------------------------------------------------------

    def _start(self) -> WarcWriter:
        return WarcWriter(
            self.loop, self.writer_config, self.stall_timeout, self._notice, self._writer_failed
        )

    def _notice(self, text: str) -> None:
        logger.warning("%s", text)

    def _send(self, job: Exchange | Metadata) -> None:
        if self.writer is None:
            self.lost += 1
            return
        if not self.writer.send(job_frame(job)):  # the writer is closing: too late for it
            self.lost += 1
        if self.writer is not None and self.writer.backlog > MAX_PENDING and not self.paused:
            self._pause()

    def _pause(self) -> None:
        """The writer is behind by MAX_PENDING: no new request until it catches up
        (the crawl goes at the writer's pace, and its loop never waits)."""
        engine = self.crawler.engine
        if engine is None or not engine.running:
            return
        self.paused = True
        engine.pause()
        self.loop.call_later(0.05, self._resume_when_caught_up)

    def _resume_when_caught_up(self) -> None:
        writer = self.writer
        if writer is not None and writer.backlog > MAX_PENDING // 2:
            self.loop.call_later(0.05, self._resume_when_caught_up)
            return
        self.paused = False
        if self.crawler.engine is not None:
            self.crawler.engine.unpause()

    def _writer_failed(self, how: str) -> None:
        """The writer died or stalled: a new one takes the jobs it never got, in a new file."""
        old = self.writer
        assert old is not None
        self.failed_writers += 1
        jobs, partly = old.unsent()
        self.lost += partly
        self.writer = None
        if self.restarts < MAX_RESTARTS:
            self.writer = self._start()  # one that cannot start is gone in turn
        if self.writer is None:
            self.lost += len(jobs)
            logger.error(
                "the WARC writer process %s: no WARC records for the rest of the capture "
                "(counted as lost: exit status 1)",
                how,
            )
            return
        self.restarts += 1
        logger.error(
            "the WARC writer process %s: the records it had not written are lost (its "
            ".open file keeps what it wrote); a new writer process writes to a new file",
            how,
        )
        for data in jobs:
            self.writer.send(data)

    async def spider_closed(self, **_: Any) -> None:
        if self.writer is None:
            self._count(Summary())
        else:
            await self._finish(self.writer)

    def _reactor_stopping(self) -> Deferred[None] | None:
        """A stop signal that comes while the spider closes makes Scrapy stop the reactor
        without waiting for ``spider_closed`` to end: the reactor's shutdown waits for
        the writer here, with the same bound, so a stalled one is killed and what it
        lost counted."""
        if self.closed or self.writer is None:
            return None
        return Deferred.fromFuture(asyncio.ensure_future(self._finish(self.writer)))

    async def _finish(self, writer: WarcWriter) -> None:
        self._count(await writer.close())

    def _count(self, summary: Summary) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.reactor.removeSystemEventTrigger(self.trigger)
        except (ValueError, KeyError, TypeError):  # the reactor is running it now
            pass
        if self.writer is not None and self.writer.failed:
            self.failed_writers += 1
            jobs, partly = self.writer.unsent()
            self.lost += len(jobs) + partly
            logger.error("the WARC writer process %s: killed", self.writer.failed)
        stats = self.crawler.stats
        for key, count in (
            ("warc/records", summary.records),
            ("warc/files", summary.files),
            ("warc/write_failed", summary.failures + self.lost),
            ("warc/writer_restarts", self.restarts),
            ("warc/lost", self.lost + self.failed_writers),
            (LOST, self.lost + self.failed_writers),
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
