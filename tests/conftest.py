"""Shared fixtures: loopback servers and an in-process crawl runner."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.utils.project import get_project_settings
from twisted.internet.defer import Deferred

from tests.support.s3server import s3_server  # noqa: F401  (a session fixture, for every layer)
from tests.support.server import Server, serve
from traverse_crawl.spider import TraverseSpider

os.environ.setdefault("SCRAPY_SETTINGS_MODULE", "traverse_crawl.settings")

# A test that starts one of these services through its fixture carries the service's
# marker (pyproject.toml), so that `-m "not redis"` leaves out exactly what needs one.
SERVICE_FIXTURES = {"redis_server": "redis", "scrapyd": "scrapyd", "s3_server": "s3"}


@pytest.hookimpl(tryfirst=True)  # before -m deselects anything
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    unmarked = [
        f"{item.nodeid} uses the {fixture} fixture but is not marked {marker}"
        for item in items
        for fixture, marker in SERVICE_FIXTURES.items()
        if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None
    ]
    if unmarked:
        raise pytest.UsageError("\n".join(unmarked))


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serve()


@pytest.fixture
def server2() -> Iterator[Server]:
    yield from serve()


class CrawlResult:
    def __init__(self, crawler: Any, items: list[dict[str, Any]], manifest_dir: Path) -> None:
        self.crawler = crawler
        self.items = items
        self.manifest_dir = manifest_dir

    @property
    def stats(self) -> dict[str, Any]:
        return self.crawler.stats.get_stats()

    def manifests(self) -> list[dict[str, Any]]:
        return [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted(self.manifest_dir.glob("*.json"))
        ]

    @property
    def manifest(self) -> dict[str, Any]:
        found = self.manifests()
        assert len(found) == 1, f"expected one manifest, found {len(found)}"
        return found[0]


def base_settings(tmp_path: Path, allow: list[str]) -> dict[str, Any]:
    return {
        "TRAVERSE_STORE": str(tmp_path / "store"),
        "TRAVERSE_MANIFEST_DIR": str(tmp_path / "manifests"),
        "TRAVERSE_MIN_DELAY": 0,
        "TRAVERSE_EGRESS_ALLOW": allow,
        "TRAVERSE_RETRY_BACKOFF": 0.01,
        "LOG_LEVEL": "INFO",
    }


@pytest.fixture
def crawl(tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """``await crawl(settings={...}, url=...)``: run the traverse spider (or the
    ``spidercls`` given, a subclass of it) in-process.

    Every server fixture the test uses is allowed through the egress guard.
    All crawls of one test share its manifest directory unless the settings name
    another: read ``result.manifest`` before the next crawl overwrites it.
    """

    async def run(
        settings: dict[str, Any] | None = None,
        spidercls: type[TraverseSpider] = TraverseSpider,
        **spider_args: Any,
    ) -> CrawlResult:
        allow = [
            request.getfixturevalue(name).origin
            for name in ("server", "server2")
            if name in request.fixturenames
        ]
        merged = get_project_settings()
        merged.setdict(base_settings(tmp_path, allow), priority="project")
        merged.setdict(settings or {}, priority="cmdline")
        runner = AsyncCrawlerRunner(merged)
        crawler = runner.create_crawler(spidercls)
        items: list[dict[str, Any]] = []

        def collect(item: Any, **_: Any) -> None:
            items.append(dict(item))

        crawler.signals.connect(collect, signal=signals.item_scraped)
        await Deferred.fromFuture(runner.crawl(crawler, **spider_args))
        return CrawlResult(crawler, items, Path(merged.get("TRAVERSE_MANIFEST_DIR")))

    return run
