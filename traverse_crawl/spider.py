"""The ``traverse`` spider: one deterministic same-origin BFS per seed.

Scrapy's engine is the loop: every admitted URL is a Request whose callback or
errback turns the response into a typed page outcome (``page_outcomes.py``); the
seed's ``Frontier`` commits outcomes in admission order and admits what they
discovered (``crawl/frontiers.py``). The spider composes the features around them:
the JOBDIR's start and resume (``jobdir/pipeline.py``), the seed's sitemaps
(``sitemaps/requests.py``), extraction, and with ``REDIS_URL`` the distributed
worker, which takes the pages from Redis instead. Its meta keys are listed in
docs/settings.md.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from typing import Any

from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from traverse_crawl.config.settings import TraverseConfig, get_config
from traverse_crawl.crawl import seeds as seedlib
from traverse_crawl.crawl import spider_settings
from traverse_crawl.crawl.frontier import Outcome
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.errors import FetchError
from traverse_crawl.jobdir.pipeline import Job, resolve_seeds
from traverse_crawl.meta_keys import INDEX, SEED, SNAPSHOT_WRITE
from traverse_crawl.page_outcomes import PageOutcomes
from traverse_crawl.runtime.stop import CrawlStopped
from traverse_crawl.sitemaps.requests import SitemapReader
from traverse_crawl.snapshots.store import store_exists
from traverse_crawl.stats import inc
from traverse_crawl.storage.location import spool_directory

logger = logging.getLogger(__name__)


class TraverseSpider(Spider):
    name = "traverse"
    config: TraverseConfig
    seeds: list[seedlib.Seed]  # from the arguments, or from the JOBDIR
    job: Job | None
    remote: Any  # with REDIS_URL, this process's ``distributed.worker.Worker``, else None
    spool: Spool  # the committed pages of every seed, until their manifests are written
    frontiers: Frontiers  # every seed's frontier, its requests and its recorded outcomes
    outcomes: PageOutcomes  # each page's outcome from its response or failure
    sitemaps: SitemapReader
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
        self._parse_page_overridden = type(self).parse_page is not TraverseSpider.parse_page
        self._warned_no_callback = False

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> TraverseSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        config = spider.config = get_config(crawler)  # validates every setting before any request
        spider.spool = Spool(spool_directory(config.manifest_dir))
        spider.seeds, spider.job = resolve_seeds(crawler.settings, config, spider._seed_args)
        warning = seedlib.password_warning(spider.seeds)
        if warning:
            logger.warning(warning)
        journal, distributed = spider.job is not None, config.redis.enabled
        spider.frontiers = Frontiers(
            crawler, config, spider.seeds, spider.spool, spider.parse, spider.on_error,
            journal=journal, distributed=distributed,
        )  # fmt: skip
        spider.extraction = None
        if config.extract is not None:  # the extraction code only then
            from traverse_crawl.extraction.spider_extraction import SpiderExtraction

            spider.extraction = SpiderExtraction(crawler, config)
        spider.outcomes = PageOutcomes(crawler, config, spider.extraction, journal)
        spider.remote = None
        if distributed:  # the worker's code, and redis, only then
            from traverse_crawl.distributed.worker import Worker

            spider.remote = Worker(spider.frontiers, crawler, config, spider._store_exists)
        parse_sitemap, sitemap_failed = spider.parse_sitemap, spider.sitemap_failed
        spider.sitemaps = SitemapReader(crawler, config, parse_sitemap, sitemap_failed)
        return spider

    async def start(self) -> AsyncIterator[Any]:
        if self.remote is not None:  # pages come from Redis (traverse_crawl/distributed/)
            # To Redis; the crawl's seeds come back into this list as the worker learns them.
            given, self.seeds[:] = list(self.seeds), []
            async for out in self.remote.start(given):
                yield out
            return
        records = self.job.start(self.crawler.stats) if self.job is not None else []
        if records is None:  # the JOBDIR cannot be written: nothing is requested
            return
        frontiers = self.frontiers.by_key
        for key in range(len(self.seeds)):
            frontier = self.frontiers.open(key)
            if self.config.mode == "replay" and not self._store_exists():
                # A crawl that ran (exit 0), with one invalid-config page per seed.
                yield self.frontiers.fail_seed(
                    key, FetchError("invalid-config", "mode 'replay' requires a store")
                )
                continue
            frontier.admit()
        kept = self.job.resume_sitemaps(frontiers, records) if self.job is not None else set()
        sitemap_requests = {  # before the pages are replayed: this holds the BFS after the seed
            key: request
            for key, frontier in frontiers.items()
            if key not in kept and (request := self.sitemaps.start(key, frontier))
        }
        if self.job is not None and records:
            self.job.resume(frontiers, records)
        for key, frontier in frontiers.items():
            if not frontier.seed_is_valid and frontier.outstanding():
                error = seedlib.invalid_seed_error(frontier.seed_url)
                for out in self.frontiers.finish_page(key, 0, Outcome({"error": error.to_dict()})):
                    yield out
                continue
            for request in self.frontiers.next_requests(key):
                yield request
            if key in sitemap_requests:
                yield sitemap_requests[key]
            self.frontiers.check_finished(key)

    def _store_exists(self) -> bool:
        """Whether replay has a store to read (asked once: in a bucket it is a request)."""
        found: bool | None = getattr(self, "_store_found", None)
        if found is None:
            found = self._store_found = store_exists(self.config.store, self.settings)
        return found

    # -- outcomes ------------------------------------------------------------

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Any]:
        meta = response.meta
        key = meta.get(SEED)
        if key is None:  # a request of a subclass's that names no callback
            self._no_callback(response)
            return
        index, extracted = meta[INDEX], list[Any]()
        frontier = self.frontiers.by_key[key]
        outcome, snapshot = await self.outcomes.of_response(frontier, index, response, extracted)
        outputs = self.frontiers.finish_page(key, index, outcome, meta.get(SNAPSHOT_WRITE))
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

    def on_error(self, failure: Failure) -> Iterator[Any]:
        if isinstance(failure.value, CrawlStopped):
            return iter(())  # never sent: the page stays admitted, a resume fetches it
        meta = failure.request.meta  # type: ignore[attr-defined]
        outcome = self.outcomes.of_failure(failure, self.frontiers.by_key[meta[SEED]])
        return self.frontiers.finish_page(meta[SEED], meta[INDEX], outcome)

    async def parse_sitemap(self, response: Response) -> AsyncIterator[Any]:
        await self.sitemaps.read(response)
        for out in self._sitemap_step(response.meta[SEED]):
            yield out

    def sitemap_failed(self, failure: Failure) -> Iterator[Any]:
        self.sitemaps.failed(failure)
        return self._sitemap_step(failure.request.meta[SEED])  # type: ignore[attr-defined]

    def _sitemap_step(self, key: int) -> Iterator[Any]:
        """The seed's next sitemap file; once there is none, its URLs to the frontier."""
        frontier = self.frontiers.by_key[key]
        request = self.sitemaps.step(key, frontier)
        if request is not None:
            yield request
            return
        if self.job is not None:
            self.job.keep_sitemaps(key, frontier)
        yield from self.frontiers.next_requests(key)
        self.frontiers.check_finished(key)
