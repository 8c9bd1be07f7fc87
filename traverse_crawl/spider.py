"""The ``traverse`` spider: one deterministic same-origin BFS per seed.

Scrapy's engine is the loop: every admitted URL is a Request whose callback or
errback turns the response into a typed page outcome; the seed's ``Frontier``
commits outcomes in admission order and admits what they discovered. With
``TRAVERSE_SITEMAPS`` on, each seed's sitemap files are requested too
(``sitemaps/requests.py``). Its meta keys are listed in docs/settings.md.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from traverse_crawl.config.settings import TraverseConfig, get_config
from traverse_crawl.crawl import seeds as seedlib
from traverse_crawl.crawl import spider_settings
from traverse_crawl.crawl.frontier import Admission, Frontier, Outcome, seed_frontier
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.links import Judge, find_links_in_turn
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.exceptions import fetch_error_from_failure
from traverse_crawl.fetch.request import WhatwgRequest
from traverse_crawl.jobdir.pipeline import Job, resolve_seeds
from traverse_crawl.manifests.outcomes import fetch_record
from traverse_crawl.meta_keys import (
    HINT,
    INDEX,
    PAGE_ID,
    REPLAY_WORK,
    SEED,
    SNAPSHOT,
    SNAPSHOT_WRITE,
    SOURCE_REF,
    WARNINGS,
)
from traverse_crawl.politeness.robots_meta import nofollow_lines
from traverse_crawl.replay.reader_child import PageWork
from traverse_crawl.replay.reuse import reusable_links
from traverse_crawl.runtime.stop import CrawlStopped
from traverse_crawl.signals import seed_finished, seed_started
from traverse_crawl.sitemaps.requests import SitemapReader
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.capture import Write
from traverse_crawl.snapshots.capture_middleware import page_verdict, snapshot_of, source_ref_of
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import store_exists
from traverse_crawl.stats import inc
from traverse_crawl.storage.location import spool_directory

logger = logging.getLogger(__name__)

# A crawl's memory does not grow with its pages: committed pages go to the crawl's
# spool (``crawl/spool.py``), and at most REQUEST_WINDOW requests a seed are out,
# the others wait in its frontier.
REQUEST_WINDOW = 256  # requests out per seed: far above the downloader's 16; 2 KB each


class TraverseSpider(Spider):
    name = "traverse"
    config: TraverseConfig
    sitemaps: SitemapReader
    seeds: list[seedlib.Seed]  # from the arguments, or from the JOBDIR
    job: Job | None
    remote: Any  # with REDIS_URL, this process's ``distributed.worker.Worker``, else None
    spool: Spool  # the committed pages of every seed, until their manifests are written
    extraction: Any  # with TRAVERSE_EXTRACT, ``extraction.spider_extraction.SpiderExtraction``

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        spider_settings.apply(settings)

    def __init__(
        self,
        url: str | None = None,
        seeds: str | None = None,
        source_id: str | None = None,
        content_type: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._seed_args = (url, seeds, source_id, content_type)
        self.frontiers: dict[int, Frontier] = {}
        self.resumed: dict[int, int] = {}  # seed key -> outcomes taken from the JOBDIR
        self._next: dict[int, int] = {}  # seed key -> first admitted index not requested
        self._out: dict[int, set[int]] = {}  # seed key -> indices requested, no outcome yet
        self._announced: set[int] = set()
        self._parse_page_overridden = type(self).parse_page is not TraverseSpider.parse_page
        self._warned_no_callback = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TraverseSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.config = get_config(crawler)  # validates every setting before any request
        spider.spool = Spool(spool_directory(spider.config.manifest_dir))
        spider.seeds, spider.job = resolve_seeds(crawler.settings, spider.config, spider._seed_args)
        warning = seedlib.password_warning(spider.seeds)
        if warning:
            logger.warning(warning)
        spider.remote = None
        if spider.config.redis.enabled:  # the worker's code, and redis, only then
            from traverse_crawl.distributed.worker import Worker

            spider.remote = Worker(spider, crawler, spider.config)
        spider.extraction = None
        if spider.config.extract is not None:  # the extraction code only then
            from traverse_crawl.extraction.spider_extraction import SpiderExtraction

            spider.extraction = SpiderExtraction(crawler, spider.config)
        spider.sitemaps = SitemapReader(
            crawler, spider.config, spider.parse_sitemap, spider.sitemap_failed
        )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        if self.remote is not None:  # pages come from Redis (traverse_crawl/distributed/)
            given, self.seeds = self.seeds, []  # to Redis; the crawl's come back (add_seeds)
            async for out in self.remote.start(given):
                yield out
            return
        records = self.job.start(self.crawler.stats) if self.job is not None else []
        if records is None:  # the JOBDIR cannot be written: nothing is requested
            return
        for key, seed in enumerate(self.seeds):
            c, spool = self.config, self.spool
            frontier = seed_frontier(seed, c, spool=spool, skipped=c.skipped)
            self.frontiers[key] = frontier
            self.crawler.signals.send_catch_log(seed_started, frontier=frontier, seed_key=key)
            if self.config.mode == "replay" and not self.store_exists():
                # A crawl that ran (exit 0), with one invalid-config page per seed.
                error = FetchError("invalid-config", "mode 'replay' requires a store")
                yield PageItem(frontier.fail_seed(error), key, 0, None)  # finished now
                self._check_finished(key)
                continue
            frontier.admit()
        kept = self.job.resume_sitemaps(self.frontiers, records) if self.job is not None else set()
        sitemap_requests = {  # before the pages are replayed: this holds the BFS after the seed
            key: request
            for key, frontier in self.frontiers.items()
            if key not in kept and (request := self.sitemaps.start(key, frontier))
        }
        if self.job is not None and records:
            self.resumed = self.job.resume(self.frontiers, records)
        for key, frontier in self.frontiers.items():
            if not frontier.seed_is_valid and frontier.outstanding():
                error = seedlib.invalid_seed_error(frontier.seed_url)
                for out in self._finish(key, 0, Outcome({"error": error.to_dict()})):
                    yield out
                continue
            for request in self._next_requests(key):
                yield request
            if key in sitemap_requests:
                yield sitemap_requests[key]
            self._check_finished(key)

    # -- requests ------------------------------------------------------------

    def _next_requests(self, key: int) -> list[WhatwgRequest]:  # up to REQUEST_WINDOW out
        frontier, out = self.frontiers[key], self._out.setdefault(key, set())
        index, batch = self._next.get(key, len(frontier.pages)), []
        while len(out) < REQUEST_WINDOW and index < frontier.admitted:
            if index >= len(frontier.pages) and index not in frontier.pending:  # not resumed
                out.add(index)
                batch.append(self._request(key, frontier.admission(index)))
            index += 1
        self._next[key] = index  # before any is yielded: another outcome may come first
        return batch

    def _request(self, key: int, adm: Admission) -> WhatwgRequest:
        meta: dict[str, Any] = {
            SEED: key,
            INDEX: adm.index,
            PAGE_ID: adm.page_id,
            WARNINGS: [],
            "handle_httpstatus_all": True,
            # Every admitted URL is on the seed's origin (links are filtered).
            "download_slot": self.frontiers[key].seed_origin,
            "depth": adm.depth,
        }
        if adm.index == 0 and (hint := self.seeds[key].content_type):
            meta[HINT] = hint
        # The URL is requested exactly as the frontier holds it (fetch/request.py).
        return WhatwgRequest(
            adm.url,
            callback=self.parse,
            errback=self.on_error,
            dont_filter=True,
            meta=meta,
            priority=-adm.depth,
        )

    # -- outcomes ------------------------------------------------------------

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        meta = response.meta
        key = meta.get(SEED)
        if key is None:  # a request of a subclass's that names no callback
            self._no_callback(response)
            return
        index = meta[INDEX]
        extracted: list[Any] = []
        try:
            outcome, snapshot = await self._outcome(self.frontiers[key], index, response, extracted)
        except Exception as exc:  # a bug must not leave the page, and its seed, unrecorded
            logger.exception(
                "unexpected error while processing %s",
                response.url,
                extra={"seed": self.frontiers[key].seed_id, "url": response.url},
            )
            inc(self.crawler.stats, "frontier/unexpected_error")
            message = f"unexpected error while processing the response from {response.url}: {exc}"
            outcome = Outcome(fetch_record(meta, FetchError("network", message)))
            snapshot = None
        outputs = self._finish(key, index, outcome, meta.get(SNAPSHOT_WRITE))
        if snapshot is None or not self._parse_page_overridden:
            for out in outputs:
                yield out
            for out in extracted:  # TRAVERSE_EXTRACT's items, after their page's
                yield out
            return
        page = next(outputs)  # the page's item comes first
        yield page
        for out in outputs:
            yield out
        for out in extracted:
            yield out
        async for out in self._page_output(response, page):
            yield out

    def parse_page(
        self, response: Response, page: dict[str, Any]
    ) -> Iterable[Any] | AsyncIterable[Any] | None:
        """The hook for subclasses, called once for each page fetched with a snapshot
        (live, capture and replay alike), after the page's outcome is recorded.

        ``page`` is a copy of the page's item (its manifest page object); the
        response is the page's final response, ``response.meta["traverse_source_ref"]``
        its snapshot's ``sourceRef``. It may yield (or return) items of the
        subclass's own, which get that ``sourceRef`` (``TRAVERSE_ITEM_SOURCE_FIELD``),
        and requests for pages that are not part of the BFS: they are fetched
        politely, like every request, and their responses go to the callback
        they name. Neither changes the manifest. A sync or async generator.
        """
        return ()

    async def _page_output(self, response: Response, page: dict[str, Any]) -> AsyncIterator[Any]:
        result: Any = self.parse_page(response, dict(page))
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return
        if hasattr(result, "__aiter__"):
            async for out in result:
                yield out
        else:
            for out in result:
                yield out

    def _no_callback(self, response: Response) -> None:
        inc(self.crawler.stats, "frontier/no_callback")
        if not self._warned_no_callback:
            self._warned_no_callback = True
            logger.warning(
                "%s: the response to a request that names no callback is dropped "
                "(parse handles the BFS pages only; give the request a callback)",
                response.url,
            )

    async def _outcome(
        self, frontier: Frontier, index: int, response: Response, extracted: list[Any]
    ) -> tuple[Outcome, Snapshot | None]:
        meta = response.meta
        snapshot: Snapshot | FetchError = meta.get(SNAPSHOT) or snapshot_of(response)
        if isinstance(snapshot, FetchError):
            return Outcome(fetch_record(meta, snapshot)), None
        links: list[str] = []
        offhost: str | None = None
        page_url, depth = frontier.queue[index]
        follow = frontier.may_follow(depth)
        # Replay's reader has done the page's own work from this snapshot already.
        work: PageWork | None = meta.get(REPLAY_WORK)
        # TRAVERSE_SKIPPED: the page's other links too, and those of pages at the depth limit.
        skipped: list[list[Any]] | None = None if frontier.skipped is None else []
        # TRAVERSE_ROBOTS_META=obey: the capture's verdict (politeness/robots_meta.py).
        verdict = page_verdict(response, snapshot, self.config)
        nofollow = verdict is not None and verdict.nofollow is not None
        # With a JOBDIR every page's links are kept, for a resume with a larger depth
        # (a link-bound warning only where the links are followed).
        if snapshot["contentType"] == "html" and frontier.reads_links(depth, self.job is not None):
            # Out of the seed's scope: the page's links are followed only as extra hops allow.
            offhost = frontier.off_scope(snapshot["url"])
            hop = frontier.hop(index, offhost)
            if not frontier.follows_hop(hop):
                pass
            elif nofollow:  # none followed; each a skipped line, with nofollow's reason
                if skipped is not None:
                    found = await self._links(snapshot, frontier.seed_origin, {}, skipped)
                    skipped = nofollow_lines(found, skipped)
            elif (reused := reusable_links(work, frontier, skipped)) is not None:
                links = self._found(reused.links or [], reused.warnings, meta if follow else {})
            else:
                links = await self._links(
                    snapshot, frontier.seed_origin, meta if follow else {}, skipped,
                    frontier.link_judge(hop),
                )  # fmt: skip
        if verdict is not None and verdict.noarchive is not None:
            # Not captured (no snapshot stored, no sourceRef, no items); its links as any page's.
            error = verdict.noarchive_error(response.url, response.status)
            outcome = Outcome(
                fetch_record(meta, error), links=links, offhost_final_url=offhost,
                skipped=skipped or None,
            )  # fmt: skip
            return outcome, None
        # The capture middleware has built the snapshot and its sourceRef; without it
        # (a project that removed it) they are built here.
        source_ref = meta.get(SOURCE_REF)
        if source_ref is None:
            source_ref = source_ref_of(snapshot, meta)
        if self.extraction is not None and snapshot["contentType"] == "html":
            # From the snapshot as stored, before the page is recorded: its warnings
            # (a bound hit) are the page's (docs/extraction.md).
            extraction = await self.extraction.extract(
                snapshot, meta[PAGE_ID], page_url, source_ref, frontier.seed_url
            )
            if extraction.warnings:
                meta.setdefault(WARNINGS, []).extend(extraction.warnings)
            extracted.extend(extraction.items)
        outcome = Outcome(
            fetch_record(meta, snapshot),
            links=links,
            offhost_final_url=offhost,
            source_ref=source_ref,
            body_size=snap.body_size(snapshot) if work is None else work.body_size,
            skipped=skipped or None,
        )
        return outcome, snapshot

    async def _links(
        self,
        snapshot: Snapshot,
        origin: str,
        meta: dict[str, Any],
        skipped: list[list[Any]] | None = None,
        judge: Judge | None = None,
    ) -> list[str]:
        """Link discovery, bounded (``crawl/links.py``; a large page off the event loop).
        ``judge``: the seed's crawl policy (``crawl/scope.py``), else the same-origin rule."""
        body, url, bound = snapshot["body"], snapshot["url"], self.config.max_links_per_page
        links, warnings = await find_links_in_turn(body, url, origin, bound, skipped, judge)
        return self._found(links, warnings, meta)

    def _found(self, links: list[str], warnings: list[str], meta: dict[str, Any]) -> list[str]:
        if warnings:
            meta.setdefault(WARNINGS, []).extend(warnings)
            inc(self.crawler.stats, "frontier/link_bound_hit")
        return links

    def on_error(self, failure: Failure) -> Iterator[Any]:
        request = failure.request  # type: ignore[attr-defined]
        if isinstance(failure.value, CrawlStopped):
            return iter(())  # never sent: the page stays admitted, a resume fetches it
        meta = request.meta
        error = fetch_error_from_failure(
            failure, request, self.config.download_timeout, self.config.download_maxsize
        )
        logger.debug(
            "page failed: %s (%s)",
            request.url,
            error.kind,
            extra={"seed": self.frontiers[meta[SEED]].seed_id, "url": request.url},
        )
        outcome = Outcome(fetch_record(meta, error))
        return self._finish(meta[SEED], meta[INDEX], outcome)

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Any]:
        await self.sitemaps.read(response)
        for out in self._sitemap_step(response.meta[SEED]):
            yield out

    def sitemap_failed(self, failure: Failure) -> Iterator[Any]:
        self.sitemaps.failed(failure)
        return self._sitemap_step(failure.request.meta[SEED])  # type: ignore[attr-defined]

    def _sitemap_step(self, key: int) -> Iterator[Any]:
        """The seed's next sitemap file; once there is none, its URLs to the frontier."""
        request = self.sitemaps.step(key, self.frontiers[key])
        if request is not None:
            yield request
            return
        if self.job is not None:
            self.job.keep_sitemaps(key, self.frontiers[key])
        yield from self._next_requests(key)
        self._check_finished(key)

    def _finish(
        self, key: int, index: int, outcome: Outcome, stored: Write | None = None
    ) -> Iterator[Any]:
        frontier = self.frontiers[key]
        inc(self.crawler.stats, "frontier/pages")
        if "error" in outcome.fetch:
            inc(self.crawler.stats, f"frontier/error/{outcome.fetch['error']['kind']}")
        # The item first: it waits in the pipelines until its snapshot (handed to the
        # writer as the response reached the spider) is durable; with
        # CONCURRENT_ITEMS=2 the requests go on meanwhile.
        item = PageItem(frontier.page_object(index, outcome), key, index, stored)
        # For the JOBDIR journal, or for Redis, which records it (``distributed/worker.py``).
        item.outcome = outcome if self.job is not None or self.remote is not None else None
        yield item
        if self.remote is not None:
            return
        frontier.record(index, outcome)
        self._out.get(key, set()).discard(index)
        yield from self._next_requests(key)
        self._check_finished(key)

    def _check_finished(self, key: int) -> None:
        frontier = self.frontiers[key]
        if frontier.finished and key not in self._announced:
            self._announced.add(key)
            if frontier.remaining:
                inc(self.crawler.stats, "frontier/truncated")
                logger.warning(
                    "seed %r: maxPages cap (%d) reached; %d further URL(s) not fetched",
                    frontier.seed_id,
                    frontier.max_pages,
                    frontier.remaining,
                )
            self.crawler.signals.send_catch_log(seed_finished, frontier=frontier, seed_key=key)

    # -- the worker of a distributed crawl (crawl/worker_protocol.py) ---------

    def add_seeds(self, seeds: Sequence[seedlib.Seed]) -> None:
        self.seeds.extend(seeds)

    def frontier(self, seed_key: int) -> Frontier:
        frontier = self.frontiers.get(seed_key)
        if frontier is None:  # a worker joins the seed: its pages are Redis's (no spool)
            seed, c = self.seeds[seed_key], self.config
            # ``skipped``: the pages' other links go to Redis with their records.
            frontier = seed_frontier(seed, c, skipped=c.skipped)
            self.frontiers[seed_key] = frontier
        return frontier

    def reads_links(self, meta: dict[str, Any]) -> bool:
        """Whether ``_outcome`` reads the links of the page this request meta is for: the
        replay reader parses a page only then (``replay/middleware.py``)."""
        key, depth = meta.get(SEED), meta.get("depth")
        frontier = self.frontiers.get(key) if key is not None else None
        if frontier is None or not isinstance(depth, int):
            return True
        return frontier.reads_links(depth, self.job is not None)

    def page_request(self, seed_key: int, admission: Admission) -> WhatwgRequest:
        return self._request(seed_key, admission)

    def store_exists(self) -> bool:
        """Whether replay has a store to read (asked once: in a bucket it is a request)."""
        found: bool | None = getattr(self, "_store_exists", None)
        if found is None:
            found = store_exists(self.config.store, self.settings)
            self._store_exists = found
        return found

    def finish_page(self, seed_key: int, index: int, outcome: Outcome) -> Iterator[Any]:
        return self._finish(seed_key, index, outcome)
