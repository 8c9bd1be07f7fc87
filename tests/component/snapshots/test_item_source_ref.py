"""Items of any type get the sourceRef of the response they came from."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator
from typing import Any

import attrs
import pytest
import pytest_twisted
import scrapy
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from tests.support.components import make_crawler
from traverse_crawl import TraverseSpider
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.snapshots.item_middleware import ItemSourceRefMiddleware

PAGE_ID = "default::http://a.test/"
REF = "traverse-snapshot:default%3A%3Ahttp%3A%2F%2Fa.test%2F?url=http%3A%2F%2Fa.test%2F&sha256=ab"


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
    request = Request(
        "http://a.test/", meta={"traverse_page_id": "default::http://a.test/", **meta}
    )
    return HtmlResponse(request.url, body=b"<p>x</p>", request=request)


async def output(
    items: list[Any], settings: dict[str, Any] | None = None, **meta: Any
) -> list[Any]:
    mw = ItemSourceRefMiddleware.from_crawler(make_crawler(settings))

    async def result() -> AsyncIterator[Any]:
        for item in items:
            yield item

    page = response(**({"traverse_source_ref": REF} | meta))
    return [out async for out in mw.process_spider_output(page, result())]


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
    mw = ItemSourceRefMiddleware.from_crawler(make_crawler())

    async def result() -> AsyncIterator[Any]:
        yield {"name": "x"}

    (item,) = [out async for out in mw.process_spider_output(response(), result())]
    assert item == {"name": "x"}


@pytest_twisted.ensureDeferred
async def test_a_request_with_the_responses_meta_copied_gets_its_own_page():
    page = response(traverse_source_ref=REF, traverse_redirects=["http://a.test/old"])
    copied = Request("http://a.test/next", meta=page.meta)
    fresh = Request("http://a.test/other", meta={"traverse_page_id": "seed::http://a.test/other"})
    mw = ItemSourceRefMiddleware.from_crawler(make_crawler())

    async def result() -> AsyncIterator[Any]:
        yield copied
        yield fresh

    assert [out async for out in mw.process_spider_output(page, result())] == [copied, fresh]
    assert not {"traverse_page_id", "traverse_source_ref", "traverse_redirects"} & set(copied.meta)
    assert fresh.meta["traverse_page_id"] == "seed::http://a.test/other"


class PageTitles(TraverseSpider):
    name = "titles"


@pytest.mark.parametrize(("spidercls", "installed"), [(TraverseSpider, False), (PageTitles, True)])
def test_only_the_traverse_spider_itself_goes_without_it(tmp_path, spidercls, installed):
    settings = {"TRAVERSE_MANIFEST_DIR": str(tmp_path), "TRAVERSE_STORE": str(tmp_path)}
    crawler = get_crawler(spidercls, settings_dict=settings)
    crawler.spider = crawler._create_spider(url="http://a.test/")
    if installed:
        assert ItemSourceRefMiddleware.from_crawler(crawler).field == "sourceRef"
    else:
        with pytest.raises(NotConfigured):
            ItemSourceRefMiddleware.from_crawler(crawler)
