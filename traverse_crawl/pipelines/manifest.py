"""Write one manifest JSON file per seed (CONTRACT §3), atomically.

A seed's manifest is written once its BFS is finished *and* every one of its
page items has passed the earlier pipelines (so a store failure noted by the
snapshot pipeline is in it). Seeds still open when the spider closes (Ctrl-C,
``CLOSESPIDER_*``, an engine error) are written with what was recorded and a
warning naming the close reason.

Stats: ``manifest/written``, ``manifest/partial``, ``manifest/error``.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler

from traverse_crawl.core.atomic import atomic_write_json
from traverse_crawl.core.config import get_config
from traverse_crawl.core.errors import ConfigError
from traverse_crawl.core.frontier import Frontier
from traverse_crawl.core.store import source_dir_name
from traverse_crawl.items import PageItem
from traverse_crawl.signals import seed_finished
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class ManifestPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.directory = get_config(crawler).manifest_dir
        try:
            os.makedirs(self.directory, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                "TRAVERSE_MANIFEST_DIR", f"cannot create {self.directory!r}: {exc.strerror or exc}"
            ) from None
        self.processed: dict[int, int] = {}
        self.finished: dict[int, Frontier] = {}
        self.written: set[int] = set()
        crawler.signals.connect(self.on_seed_finished, signal=seed_finished)
        crawler.signals.connect(self.on_spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ManifestPipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            key = item.seed_key
            self.processed[key] = self.processed.get(key, 0) + 1
            self._maybe_write(key)
        return item

    def on_seed_finished(self, frontier: Frontier, seed_key: int) -> None:
        self.finished[seed_key] = frontier
        self._maybe_write(seed_key)

    def _maybe_write(self, key: int) -> None:
        frontier = self.finished.get(key)
        if frontier is not None and self.processed.get(key, 0) >= len(frontier.pages):
            self.write(key, frontier)

    def on_spider_closed(self, spider: Spider, reason: str) -> None:
        for key, frontier in getattr(spider, "frontiers", {}).items():
            if key not in self.written:
                frontier.stop(reason)
                self.write(key, frontier)
                inc(self.crawler.stats, "manifest/partial")

    def write(self, key: int, frontier: Frontier) -> None:
        if key in self.written:
            return
        self.written.add(key)
        path = manifest_path(self.directory, frontier.seed_id)
        try:
            atomic_write_json(path, frontier.manifest())
        except OSError as exc:
            logger.error("could not write manifest %s: %s", path, exc)
            inc(self.crawler.stats, "manifest/error")
            return
        logger.info("manifest for seed %r: %s", frontier.seed_id, path)
        inc(self.crawler.stats, "manifest/written")


def manifest_path(directory: str, seed_id: str) -> str:
    """``<store-dir-name of the seed id>.json`` (CONTRACT §3)."""
    return os.path.join(directory, source_dir_name(seed_id) + ".json")
