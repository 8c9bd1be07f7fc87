"""Page ids, the capture middleware and the snapshot pipeline, for requests of any spider."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from twisted.internet.defer import Deferred

from tests.support.components import html, make_crawler, page_request, reply, stats
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.snapshots.capture_middleware import CaptureMiddleware, PageIdMiddleware
from traverse_crawl.snapshots.pipeline import SnapshotStorePipeline
from traverse_crawl.snapshots.source_ref import build_source_ref, parse_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

SNAPSHOT = "traverse_snapshot"
SOURCE_REF = "traverse_source_ref"


def crawler_for(tmp_path: Path, mode: str = "live", **settings: object) -> Any:
    return make_crawler({"TRAVERSE_MODE": mode, "TRAVERSE_STORE": str(tmp_path), **settings})


def page_ids(tmp_path: Path, **settings: object) -> PageIdMiddleware:
    return PageIdMiddleware.from_crawler(crawler_for(tmp_path, **settings))


async def reach(mw: CaptureMiddleware, response: Any) -> None:
    """The response reaches the spider, as Scrapy hands it over: ``mw`` sees it first,
    then its callback's (empty) output."""

    async def nothing() -> AsyncIterator[Any]:
        return
        yield

    mw.process_spider_input(response)
    assert [out async for out in mw.process_spider_output(response, nothing())] == []


def capture(tmp_path: Path, mode: str = "live") -> tuple[PageIdMiddleware, CaptureMiddleware]:
    crawler = crawler_for(tmp_path, mode)
    return PageIdMiddleware.from_crawler(crawler), CaptureMiddleware.from_crawler(crawler)


def test_a_request_of_any_spider_gets_a_page_id_of_the_spiders_name(tmp_path):
    mw = page_ids(tmp_path)
    request = Request("http://a.test/p?q=1#frag")
    mw.process_request(request)
    assert request.meta["traverse_page_id"] == "default::http://a.test/p?q=1"


def test_TRAVERSE_SOURCE_ID_names_the_source(tmp_path):
    mw = page_ids(tmp_path, TRAVERSE_SOURCE_ID="shop/eu")
    request = Request("http://a.test/")
    mw.process_request(request)
    assert request.meta["traverse_page_id"] == "shop%2Feu::http://a.test/"


@pytest.mark.parametrize(
    "meta",
    [
        {"traverse_page_id": "seed::http://a.test/p"},  # a frontier page keeps its id
        {"traverse_robots": True},
        {"traverse_sitemap_id": "seed::sitemap::http://a.test/s.xml"},
    ],
)
def test_frontier_pages_keep_their_id_and_robots_and_sitemaps_get_none(tmp_path, meta):
    mw = page_ids(tmp_path)
    request = Request("http://a.test/p", meta=dict(meta))
    mw.process_request(request)
    assert request.meta == meta


@pytest_twisted.ensureDeferred
async def test_a_2xx_response_becomes_its_snapshot_and_sourceRef(tmp_path):
    ids, mw = capture(tmp_path)
    request = Request("http://a.test/p")
    ids.process_request(request)
    response = html(request, "<p>caf\u00e9</p>", ETag='"v1"')
    await reach(mw, response)
    snapshot = request.meta[SNAPSHOT]
    assert snapshot["sourceId"] == "default::http://a.test/p"
    assert (snapshot["body"], snapshot["contentType"], snapshot["etag"]) == (
        "<p>caf\u00e9</p>",
        "html",
        '"v1"',
    )
    assert request.meta[SOURCE_REF] == build_source_ref(snapshot)
    assert "traverse_snapshot_write" not in request.meta  # live mode stores nothing


@pytest.mark.parametrize("status", [304, 404, 503])
@pytest_twisted.ensureDeferred
async def test_a_response_that_is_not_2xx_has_no_snapshot(tmp_path, status):
    ids, mw = capture(tmp_path, "capture")
    request = Request("http://a.test/p")
    ids.process_request(request)
    await reach(mw, reply(request, status))
    assert SNAPSHOT not in request.meta and SOURCE_REF not in request.meta


@pytest_twisted.ensureDeferred
async def test_a_replayed_page_keeps_its_stored_snapshot_and_sourceRef(tmp_path):
    _, mw = capture(tmp_path, "replay")
    stored = {
        "sourceId": "seed::http://a.test/p",
        "url": "http://a.test/p",
        "fetchedAt": "2026-01-02T03:04:05.678Z",
        "status": 200,
        "contentType": "text",
        "body": "old",
        "bodyHash": "ab" * 32,
        "fromCache": True,
    }
    request = page_request(traverse_snapshot=stored)
    await reach(mw, html(request, "old"))
    assert request.meta[SNAPSHOT] is stored
    assert request.meta[SOURCE_REF] == build_source_ref(stored)


@pytest_twisted.ensureDeferred
async def test_an_item_waits_until_the_snapshot_it_names_is_durable(tmp_path):
    crawler = make_crawler({"TRAVERSE_STORE": str(tmp_path)})
    ids, mw = PageIdMiddleware.from_crawler(crawler), CaptureMiddleware.from_crawler(crawler)
    pipeline = SnapshotStorePipeline.from_crawler(crawler)
    pipeline.open_spider()
    request = Request("http://a.test/p")
    ids.process_request(request)
    await reach(mw, html(request, "<p>kept</p>"))
    ref = request.meta[SOURCE_REF]
    store = FilesystemSnapshotStore(str(tmp_path))

    item = {"title": "kept", "sourceRef": ref}
    waiter = pipeline.process_item(item)
    assert isinstance(waiter, asyncio.Future)
    assert await Deferred.fromFuture(waiter) is item
    parsed = parse_source_ref(ref)
    assert parsed is not None
    on_disk = store.find(parsed.source_id, parsed.body_hash, parsed.fetched_at)
    assert on_disk is not None and on_disk["body"] == "<p>kept</p>"
    # Once durable, an item passes at once; one that names no snapshot always does.
    later = {"sourceRef": ref}
    assert pipeline.process_item(later) is later
    plain = {"title": "no ref"}
    assert pipeline.process_item(plain) is plain
    await Deferred.fromFuture(asyncio.ensure_future(pipeline.close_spider()))
    assert stats(crawler)["snapshot/stored"] == 1


@pytest_twisted.ensureDeferred
async def test_a_write_that_fails_lets_the_items_go_on_and_is_counted(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    crawler = make_crawler({"TRAVERSE_STORE": str(root)})
    ids, mw = PageIdMiddleware.from_crawler(crawler), CaptureMiddleware.from_crawler(crawler)
    pipeline = SnapshotStorePipeline.from_crawler(crawler)
    pipeline.open_spider()
    request = Request("http://a.test/p")
    ids.process_request(request)
    # A file where the page's directory should be: the write fails.
    (
        root / Path(FilesystemSnapshotStore(str(root)).directory("default::http://a.test/p")).name
    ).write_text("")
    await reach(mw, html(request))
    item = {"sourceRef": request.meta[SOURCE_REF]}
    result = pipeline.process_item(item)
    if isinstance(result, asyncio.Future):
        result = await Deferred.fromFuture(result)
    assert result is item
    page = PageItem({"id": "p"}, 0, 0)
    assert pipeline.process_item(page) is page  # no write: nothing to wait for
    await Deferred.fromFuture(asyncio.ensure_future(pipeline.close_spider()))
    assert stats(crawler)["snapshot/store_failed"] == 1
    assert "snapshot/stored" not in stats(crawler)
