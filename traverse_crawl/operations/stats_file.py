"""``TRAVERSE_STATS_FILE``: the crawl's final stats and each seed's totals, one JSON file.

Written atomically (``utils/atomic.py``) once the engine has stopped: after the
manifests, so each seed's totals are its manifest's, and also after a first
SIGINT/SIGTERM that let the crawl finish (docs/operations.md, "The stats file").
"""

from __future__ import annotations

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
from traverse_crawl.operations.exit_status import lost_count
from traverse_crawl.signals import manifest_written, seed_started
from traverse_crawl.utils.atomic import atomic_write_json

logger = logging.getLogger(__name__)


def seed_totals(frontier: Frontier, manifest: str | None) -> dict[str, Any]:
    """One seed's figures, as its manifest has them."""
    return {
        "id": frontier.seed_id,
        "url": frontier.seed_url,
        "pages": len(frontier.pages),
        "outcomes": dict(sorted(frontier.outcomes.items())),
        "truncated": frontier.remaining > 0,
        "warnings": sum(1 for _ in manifest_warnings(frontier)),
        "manifest": manifest,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value.isoformat()
    return str(value)


class StatsFileExtension:
    def __init__(self, crawler: Crawler) -> None:
        self.path = get_config(crawler).stats_file
        if not self.path:
            raise NotConfigured
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
            "stats": dict(sorted(stats.items())),
            "lost": lost_count(stats),
            "seeds": [
                seed_totals(frontier, self.manifests.get(frontier.seed_id))
                for _, frontier in sorted(self.frontiers.items())
            ],
            "items": [str(uri) for uri in feeds],
        }

    def engine_stopped(self) -> None:
        document = self.document()
        try:
            # Through JSON once, so a value JSON cannot hold is a string, not an error.
            atomic_write_json(self.path, _roundtrip(document))
        except OSError as exc:
            logger.error("could not write the stats file %s (%s)", self.path, exc)
            return
        logger.info("stats file: %s", self.path)


def _roundtrip(document: dict[str, Any]) -> Any:
    return json.loads(json.dumps(document, default=_jsonable, ensure_ascii=False))
