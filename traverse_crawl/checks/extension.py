"""``ChecksExtension``: each seed's checks, once its manifest and items file are written.

Added by the add-on with ``TRAVERSE_CHECKS`` (docs/checks.md). For the traverse spider
(and its subclasses) a seed's checks run when its manifest is written (the
``manifest_written`` signal: once per seed, with ``JOBDIR`` and ``REDIS_URL`` too),
after its items file when ``TRAVERSE_EXTRACT`` extracts: read from the files, off the
event loop, so the crawl pays nothing per page. The distributed worker awaits the
answer before it tells Redis the seed is done. Items of the spider's own classes (any
item ``ItemAdapter`` accepts, its type the class name) are counted as they are scraped,
in the seed their ``sourceRef`` names. Any other spider of a project with the add-on
is one seed (``TRAVERSE_SOURCE_ID``, else the spider's name): its pages are the
responses its requests got and their typed failures, its results written at the end.

Each failing check is one WARNING line, counted in ``checks/failed`` (``checks/passed``
beside it); the crawl then exits 3 unless something was lost (docs/monitoring.md,
"Exit status"). ``results(crawler)`` gives the stats file and the metrics each seed's.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any
from urllib.parse import unquote

from itemadapter import ItemAdapter, is_item
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.checks.evaluate import SeedEvaluator
from traverse_crawl.checks.output import checks_path, document, failure_line, run_seed
from traverse_crawl.checks.rules import Checks
from traverse_crawl.checks.setting import CHECKS_SETTING
from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.extraction.items import ExtractedItem
from traverse_crawl.manifests.pipeline import manifest_path
from traverse_crawl.meta_keys import ROBOTS, SITEMAP
from traverse_crawl.runtime.pending import result_pending
from traverse_crawl.signals import manifest_written, request_failed
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import shown_name
from traverse_crawl.stats import inc, inc_lost

logger = logging.getLogger(__name__)

FAILED = "checks/failed"
PASSED = "checks/passed"
_ATTR = "_traverse_checks_results"


def results(crawler: Any) -> dict[str, dict[str, Any]]:
    """Each seed's checks document, by seed id, as far as the crawl has them."""
    found: dict[str, dict[str, Any]] = getattr(crawler, _ATTR, {})
    return found


def failed_checks(crawler: Any) -> list[tuple[str, str]]:
    """(seed id, check) of every failing check so far."""
    return [
        (seed_id, result["check"])
        for seed_id, doc in results(crawler).items()
        for result in doc["results"]
        if not result["passed"]
    ]


def seed_of_ref(source_ref: Any) -> str | None:
    """The seed id of a frontier page's ``sourceRef`` (its page id's first part)."""
    ref = parse_source_ref(source_ref) if isinstance(source_ref, str) else None
    if ref is None or "::" not in ref.source_id:
        return None
    # encodeURIComponent escapes ":", so the first "::" ends the seed's part.
    return unquote(ref.source_id.partition("::")[0], errors="surrogateescape")


def _not_a_page(request: Request) -> bool:
    """robots.txt and sitemaps are fetched for the spider, not by it."""
    return bool(request.meta.get(ROBOTS) or request.meta.get(SITEMAP))


def item_type(item: Any) -> str:
    """An item's type for the checks: an extracted item's ``type``, else its class name."""
    if isinstance(item, ExtractedItem):
        return str(item.get("type"))
    return type(item).__name__


class ChecksExtension:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        checks = CHECKS_SETTING.of(config)
        if checks is None:
            raise NotConfigured
        self.crawler = crawler
        self.checks: Checks = checks
        self.config = config
        self.source_field = config.item_source_field
        self.items_dir = config.items_dir if config.extract is not None else None
        self.evaluators: dict[str, SeedEvaluator] = {}
        self.names = {t.name for t in self.checks.types}
        self.pending: set[asyncio.Future[Any]] = set()
        self.traverse = False  # the spider is the traverse spider: seeds have manifests
        self.own_seed = ""
        setattr(crawler, _ATTR, {})
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self.on_manifest_written, signal=manifest_written)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChecksExtension:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        # A spider with seeds (the traverse spider, or one of its subclasses) has their
        # manifests, as the manifest pipeline decides; any other spider, its own pages.
        self.traverse = Frontiers.of(spider) is not None
        if not self.traverse:
            self.own_seed = self.config.source_id or spider.name
            self.crawler.signals.connect(self.response_received, signal=signals.response_received)
            self.crawler.signals.connect(self.request_failed, signal=request_failed)

    # -- a plain spider's pages ------------------------------------------------

    def response_received(self, response: Response, request: Request) -> None:
        if _not_a_page(request):
            return
        page: dict[str, Any] = {"url": response.url}
        if response.status >= 400:
            page["fetch"] = {"error": {"kind": "http-error", "status": response.status}}
        else:
            page["fetch"] = {"snapshot": {"contentType": "html"}}
        self._evaluator(self.own_seed).add_page(page)

    def request_failed(self, request: Request, error: Any) -> None:
        if _not_a_page(request):
            return
        page = {"url": request.url, "fetch": {"error": error.to_dict()}}
        self._evaluator(self.own_seed).add_page(page)

    # -- items -----------------------------------------------------------------

    def item_scraped(self, item: Any) -> None:
        if isinstance(item, (PageItem, ExtractedItem)) and self.traverse:
            return  # pages are the manifest's, extracted items the items file's
        if not is_item(item) or item_type(item) not in self.names:
            return
        if self.traverse:
            seed = seed_of_ref(ItemAdapter(item).get(self.source_field))
            if seed is None:
                return
        else:
            seed = self.own_seed
        self._evaluator(seed).add(item, self.source_field)

    def _evaluator(self, seed_id: str) -> SeedEvaluator:
        evaluator = self.evaluators.get(seed_id)
        if evaluator is None:
            evaluator = self.evaluators[seed_id] = SeedEvaluator(self.checks, seed_id)
            # A plain spider's pages come before their items are known: none of them can
            # be named as a page that gave no item.
            evaluator.name_pages_without_items = self.traverse
        return evaluator

    # -- a seed's manifest -------------------------------------------------------

    def on_manifest_written(self, seed_id: str, path: str) -> asyncio.Future[None]:
        """The seed's checks, once its items file is written (with ``TRAVERSE_EXTRACT``);
        the future is done once its results are written."""
        task = asyncio.ensure_future(self._seed(seed_id, path))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        # A seed's manifest may be written after the spider_closed handlers (a bucket's
        # upload): the stats file and the exit status wait for its checks too.
        result_pending(self.crawler, task)
        return task

    async def _seed(self, seed_id: str, path: str) -> None:
        written = True
        if self.items_dir is not None:
            await asyncio.sleep(0)  # the extraction's handler of the same signal has run
            spider = self.crawler.spider
            extraction = getattr(spider, "extraction", None)
            done = getattr(extraction, "written", {}).pop(seed_id, None)
            if done is not None:
                written = bool(await done)
        evaluator = self.evaluators.pop(seed_id, None)
        try:
            doc = await asyncio.to_thread(
                run_seed, self.checks, path, self.items_dir, self.crawler.settings, written,
                None, evaluator,
            )  # fmt: skip
        except (OSError, ValueError) as exc:
            inc_lost(self.crawler.stats, "checks/file_error")
            logger.error("could not write the checks of seed %r (%s): %s", seed_id,
                         shown_name(checks_path(path), seed_id), exc)  # fmt: skip
            return
        self._report(seed_id, doc, checks_path(path))

    def _report(self, seed_id: str, doc: dict[str, Any], path: str) -> None:
        results(self.crawler)[seed_id] = doc
        stats = self.crawler.stats
        for result in doc["results"]:
            if result["passed"]:
                inc(stats, PASSED)
                continue
            inc(stats, FAILED)
            logger.warning("%s", failure_line(result), extra={"seed": seed_id})
        logger.info(
            "checks for seed %r: %d passed, %d failed: %s",
            seed_id, len(doc["results"]) - doc["failed"], doc["failed"],
            shown_name(path, seed_id), extra={"seed": seed_id},
        )  # fmt: skip

    async def spider_closed(self) -> None:
        # The seeds whose manifests are written in other spider_closed handlers, then
        # each one's checks: before the stats are read for the exit status.
        await asyncio.sleep(0)
        while self.pending:
            await asyncio.wait(list(self.pending))
            await asyncio.sleep(0)
        if not self.traverse and self.own_seed:
            self._plain_spider_results()

    def _plain_spider_results(self) -> None:
        seed_id = self.own_seed
        evaluator = self._evaluator(seed_id)
        target = manifest_path(self.config.manifest_dir, seed_id)
        doc = document(self.checks, {"id": seed_id}, evaluator.results())
        from traverse_crawl.checks.output import write_document

        try:
            if not self.config.manifest_dir.startswith("s3://"):
                os.makedirs(self.config.manifest_dir, exist_ok=True)
            write_document(target, doc, self.crawler.settings)
        except OSError as exc:
            inc_lost(self.crawler.stats, "checks/file_error")
            logger.error("could not write the checks of %r: %s", seed_id, exc)
        self._report(seed_id, doc, checks_path(target))
