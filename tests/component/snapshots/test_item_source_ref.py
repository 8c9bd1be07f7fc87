"""Items of any type get the sourceRef of the response they came from (the capture middleware)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest_twisted
import scrapy
from scrapy import Request
from scrapy.http import HtmlResponse, Response

from tests.support.components import make_crawler
from traverse_crawl import build_source_ref
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.snapshots.capture_middleware import CaptureMiddleware

PAGE_ID = "default::http://a.test/"
# A replayed page's snapshot: the middleware takes its sourceRef from it.
STORED = {
    "sourceId": PAGE_ID,
    "url": "http://a.test/",
    "fetchedAt": "2026-01-02T03:04:05.678Z",
    "status": 200,
    "contentType": "html",
    "body": "<p>x</p>",
    "bodyHash": "ab" * 32,
    "fromCache": True,
}
REF = build_source_ref(STORED)  # type: ignore[arg-type]


class Declared(scrapy.Item):
    name = scrapy.Field()
    sourceRef = scrapy.Field()


class Undeclared(scrapy.Item):
    name = scrapy.Field()


class Provenance(scrapy.Item):
    name = scrapy.Field()
    provenance = scrapy.Field()


@dataclasses.dataclass
class Offer:
    name: str
    sourceRef: str | None = None


@dataclasses.dataclass(frozen=True)
class Frozen:
    name: str
    sourceRef: str | None = None


@attrs.define
class AttrsOffer:
    name: str
    sourceRef: str | None = None


def response(**meta: Any) -> HtmlResponse:
    request = Request("http://a.test/", meta={"traverse_page_id": PAGE_ID, **meta})
    return HtmlResponse(request.url, body=b"<p>x</p>", request=request)


def middleware(settings: dict[str, Any] | None = None) -> CaptureMiddleware:
    return CaptureMiddleware.from_crawler(
        make_crawler({"TRAVERSE_MODE": "live", **(settings or {})})
    )


async def output(
    items: list[Any], settings: dict[str, Any] | None = None, **meta: Any
) -> list[Any]:
    mw = middleware(settings)

    async def result() -> AsyncIterator[Any]:
        for item in items:
            yield item

    page = response(**({"traverse_snapshot": STORED} | meta))
    return await through(mw, page, result())


async def through(mw: CaptureMiddleware, page: Any, result: AsyncIterator[Any]) -> list[Any]:
    """A response and its callback's output, through ``mw`` as Scrapy passes them."""
    mw.process_spider_input(page)
    return [out async for out in mw.process_spider_output(page, result)]


@pytest_twisted.ensureDeferred
async def test_every_kind_of_item_gets_the_sourceRef_of_its_response():
    items = [{"name": "d"}, Declared(name="s"), Offer("dc"), AttrsOffer("a")]
    out = await output(items)
    assert out == items  # the same objects, in the same order
    assert [dict(i) if isinstance(i, scrapy.Item) else i for i in out][:2] == [
        {"name": "d", "sourceRef": REF},
        {"name": "s", "sourceRef": REF},
    ]
    assert out[2].sourceRef == REF and out[3].sourceRef == REF


@pytest_twisted.ensureDeferred
async def test_an_item_with_a_sourceRef_keeps_it():
    (item,) = await output([{"sourceRef": "mine"}])
    assert item == {"sourceRef": "mine"}


@pytest_twisted.ensureDeferred
async def test_TRAVERSE_ITEM_SOURCE_FIELD_names_the_field():
    (plain, declared) = await output(
        [{}, Provenance(name="p")], {"TRAVERSE_ITEM_SOURCE_FIELD": "provenance"}
    )
    assert plain == {"provenance": REF} and declared["provenance"] == REF


@pytest_twisted.ensureDeferred
async def test_an_item_that_cannot_take_the_field_passes_with_one_warning_per_class(caplog):
    caplog.set_level(logging.WARNING)
    items = [Undeclared(name="1"), Undeclared(name="2"), Frozen("f"), Frozen("g")]
    out = await output(items)
    assert out == items and all("sourceRef" not in dict(i) for i in out[:2])
    assert out[2].sourceRef is None
    warnings = [r.getMessage() for r in caplog.records if "cannot take the field" in r.getMessage()]
    assert len(warnings) == 2
    assert f"{__name__}.Undeclared" in warnings[0] and "'sourceRef'" in warnings[0]
    assert f"{__name__}.Frozen" in warnings[1]


@pytest_twisted.ensureDeferred
async def test_page_items_and_responses_without_a_snapshot_are_left_alone():
    page = PageItem({"id": "p", "fetch": {"error": {"kind": "network"}}}, 0, 0)
    assert await output([page]) == [page] and "sourceRef" not in page
    mw = middleware()

    async def result() -> AsyncIterator[Any]:
        yield {"name": "x"}

    request = Request("http://a.test/", meta={"traverse_page_id": PAGE_ID})
    gone = Response(request.url, status=404, request=request)
    (item,) = await through(mw, gone, result())
    assert item == {"name": "x"}


@pytest_twisted.ensureDeferred
async def test_a_request_with_the_responses_meta_copied_gets_its_own_page():
    page = response(traverse_snapshot=STORED, traverse_redirects=["http://a.test/old"])
    copied = Request("http://a.test/next", meta=page.meta)
    fresh = Request("http://a.test/other", meta={"traverse_page_id": "seed::http://a.test/other"})
    mw = middleware()

    async def result() -> AsyncIterator[Any]:
        yield copied
        yield fresh

    assert await through(mw, page, result()) == [copied, fresh]
    copied_keys = {
        "traverse_page_id",
        "traverse_source_ref",
        "traverse_snapshot",
        "traverse_redirects",
    }
    assert not copied_keys & set(copied.meta)
    assert fresh.meta["traverse_page_id"] == "seed::http://a.test/other"


@pytest_twisted.ensureDeferred
async def test_the_snapshot_is_built_before_the_callback_runs():
    seen: list[Any] = []
    page = response()
    mw = middleware()
    mw.process_spider_input(page)  # what Scrapy does before it calls the callback
    seen.append(page.meta.get("traverse_source_ref"))

    async def output() -> AsyncIterator[Any]:
        yield {"name": "x"}

    (item,) = [out async for out in mw.process_spider_output(page, output())]
    assert seen == [item["sourceRef"]] and item["sourceRef"].startswith("traverse-snapshot:")
    assert page.meta["traverse_snapshot"]["body"] == "<p>x</p>"


@pytest_twisted.ensureDeferred
async def test_a_frontier_page_is_captured_when_its_output_is_first_asked_for():
    page = response(traverse_seed=0)
    mw = middleware()
    mw.process_spider_input(page)
    assert "traverse_snapshot" not in page.meta  # not yet: Scrapy's pending I/O goes first
    seen: list[Any] = []

    async def parse() -> AsyncIterator[Any]:
        seen.append(page.meta["traverse_source_ref"])
        yield PageItem({"id": PAGE_ID}, 0, 0)

    (item,) = [out async for out in mw.process_spider_output(page, parse())]
    assert seen[0].startswith("traverse-snapshot:") and "sourceRef" not in item
