"""``TRAVERSE_STATS_FILE``: the crawl's final stats and each seed's totals, one JSON file.

Written atomically (``utils/atomic.py``) once the engine has stopped: after the
manifests, so each seed's totals are its manifest's, and also after a first
SIGINT/SIGTERM that let the crawl finish (docs/monitoring.md, "The stats file").
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.crawl.spool import manifest_warnings
from traverse_crawl.extraction.items import items_path
from traverse_crawl.operations.exit_status import lost_count
from traverse_crawl.runtime.pending import output_pending, results_settled
from traverse_crawl.signals import manifest_written, seed_started
from traverse_crawl.snapshots.store import shown_name
from traverse_crawl.stats import inc_lost
from traverse_crawl.utils.atomic import atomic_write_json
from traverse_crawl.utils.redact import redact_text, redact_url

logger = logging.getLogger(__name__)

STATS_FILE_FAILED = "stats_file/failed"  # the stats file could not be written (lost)


def seed_totals(
    frontier: Frontier, manifest: str | None, items_file: str | None = None
) -> dict[str, Any]:
    """One seed's figures, as its manifest has them; a URL's password masked (the
    manifest's file name that holds it as a glob: ``store.shown_name``). ``items_file``:
    the seed's items file (``TRAVERSE_EXTRACT``), once its manifest is written."""
    if manifest is not None:
        manifest = shown_name(manifest, frontier.seed_id)
    totals = {
        "id": redact_text(frontier.seed_id),
        "url": redact_url(frontier.seed_url),
        "pages": len(frontier.pages),
        "outcomes": dict(sorted(frontier.outcomes.items())),
        "truncated": frontier.remaining > 0,
        "warnings": sum(1 for _ in manifest_warnings(frontier)),
        "manifest": manifest,
    }
    if items_file is not None:
        totals["itemsFile"] = shown_name(items_file, frontier.seed_id)
    return totals


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()
    return str(value)


class StatsFileExtension:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        self.path = config.stats_file
        if not self.path:
            raise NotConfigured
        self.items_dir = config.items_dir if config.extract is not None else None
        self.crawler = crawler
        self.frontiers: dict[int, Frontier] = {}
        self.manifests: dict[str, str] = {}
        crawler.signals.connect(self.seed_started, signal=seed_started)
        crawler.signals.connect(self.manifest_written, signal=manifest_written)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StatsFileExtension:
        return cls(crawler)

    def seed_started(self, frontier: Frontier, seed_key: int) -> None:
        self.frontiers[seed_key] = frontier

    def manifest_written(self, seed_id: str, path: str) -> None:
        self.manifests[seed_id] = path

    def document(self) -> dict[str, Any]:
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        feeds = self.crawler.settings.getdict("FEEDS")
        return {
            "stats": {
                redact_text(name): redact_text(value) if isinstance(value, str) else value
                for name, value in sorted(stats.items())
            },
            "lost": lost_count(stats),
            "seeds": [
                seed_totals(frontier, self.manifests.get(frontier.seed_id), self._items(frontier))
                for _, frontier in sorted(self.frontiers.items())
            ],
            "items": [redact_text(str(uri)) for uri in feeds],
            **self._checks(),
        }

    def _checks(self) -> dict[str, Any]:
        """With ``TRAVERSE_CHECKS``: each seed's checks, its failing ones by name."""
        if get_config(self.crawler).checks is None:
            return {}
        from traverse_crawl.checks.extension import results

        return {
            "checks": [
                {
                    "seed": redact_text(seed_id),
                    "passed": doc["passed"],
                    "failed": [r["check"] for r in doc["results"] if not r["passed"]],
                    "results": len(doc["results"]),
                }
                for seed_id, doc in sorted(results(self.crawler).items())
            ]
        }

    def _items(self, frontier: Frontier) -> str | None:
        """The seed's items file, where extraction writes it once the manifest is written."""
        if self.items_dir is None or frontier.seed_id not in self.manifests:
            return None
        return items_path(self.items_dir, frontier.seed_id)

    def engine_stopped(self) -> asyncio.Future[None]:
        # Once every seed's checks are in (their results are in the document); the exit
        # status waits for this write, whose failure is a lost output.
        task = asyncio.ensure_future(self._write())
        output_pending(self.crawler, task)
        return task

    async def _write(self) -> None:
        await results_settled(self.crawler)
        document = self.document()
        try:
            # Through JSON once, so a value JSON cannot hold is a string, not an error.
            atomic_write_json(self.path, _roundtrip(document))
        except OSError as exc:
            # A lost output like any other (exit status 1). Counted before
            # LostResultsExitStatus reads the count (it waits for this write), and the
            # crawl command reads it afterwards.
            inc_lost(self.crawler.stats, STATS_FILE_FAILED)
            logger.error("could not write the stats file %s (%s)", self.path, exc)
            return
        logger.info("stats file: %s", self.path)


def _roundtrip(document: dict[str, Any]) -> Any:
    return json.loads(json.dumps(document, default=_jsonable, ensure_ascii=False))
