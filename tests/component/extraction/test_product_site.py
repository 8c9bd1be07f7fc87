"""Extraction while crawling a real loopback shop: the hand-computed items, their
evidence spans, the items file in manifest order, and replay giving the same bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.support import product_site
from tests.support.server import Server
from traverse_crawl import Extractor, TraverseSpider


def rules_file(tmp_path: Path, text: str = product_site.RULES) -> str:
    path = tmp_path / "extract.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def extract_settings(tmp_path: Path, **more: Any) -> dict[str, Any]:
    return {
        "TRAVERSE_EXTRACT": rules_file(tmp_path),
        "TRAVERSE_ITEMS_DIR": str(tmp_path / "items"),
        "TRAVERSE_MAX_PAGES": 10,
        **more,
    }


def items_file(tmp_path: Path) -> Path:
    found = sorted((tmp_path / "items").glob("*.jsonl"))
    assert len(found) == 1, found
    return found[0]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def expected_items(u: Any) -> list[tuple[str, str, dict[str, Any], list[str]]]:
    """(type, page path, fields, missing) of every item, in manifest then node order."""
    return [
        ("card", "/shop/list.html",
         {"title": "Lamp", "price": 1299.0, "tags": ["home", "light"],
          "link": u("/shop/item/1.html")}, []),
        ("card", "/shop/list.html",
         {"title": "Lamp", "price": 15.0, "link": u("/shop/item/2.html")}, ["tags"]),
        ("card", "/shop/list.html",
         {"title": "Salt & Pepper", "tags": ["kitchen"]}, ["price", "link"]),
        ("product", "/shop/item/1.html",
         {"name": "Lamp", "sku": "L-1", "stock": 1024, "available": True, "rating": 4.5}, []),
        ("product", "/shop/item/2.html",
         {"name": "Lamp\ntwo", "rating": -3.5}, ["sku", "stock", "available"]),
    ]  # fmt: skip


def check_items(items: list[dict[str, Any]], server: Server, manifest: dict[str, Any]) -> None:
    refs = {page["url"]: page["sourceRef"] for page in manifest["pages"] if "sourceRef" in page}
    got = [(i["type"], i["url"], i["fields"], i["missing"]) for i in items]
    want = [(t, server.url(p), f, m) for t, p, f, m in expected_items(server.url)]
    assert got == want
    for item in items:
        assert item["sourceRef"] == refs[item["url"]]
        assert item["pageId"] == f"site::{item['url']}"
        assert item["extractor"].startswith("sha256:")


def span_of(entry: dict[str, Any]) -> tuple[int, int] | None:
    span = entry.get("span")
    return None if span is None else (span[0], span[1])


@pytest_twisted.ensureDeferred
async def test_capture_yields_the_hand_computed_items_with_exact_spans(server, crawl, tmp_path):
    server.site(product_site.PAGES)
    result = await crawl(settings=extract_settings(tmp_path), url=server.url("/"), source_id="site")
    manifest = result.manifest
    items = lines(items_file(tmp_path))
    check_items(items, server, manifest)
    # The same items were yielded (FEEDS can take them), after the page items.
    yielded = [item for item in result.items if "evidence" in item]
    assert sorted(map(json.dumps, yielded)) == sorted(map(json.dumps, items))

    listing = product_site.LISTING
    first, second, salt = items[0]["evidence"], items[1]["evidence"], items[2]["evidence"]
    # The same title at two nodes: each span is its own node's.
    lamp_1 = listing.index("<h2>Lamp</h2>") + len("<h2>")
    lamp_2 = listing.index("<h2>Lamp</h2>", lamp_1) + len("<h2>")
    assert first["title"] == [{"selector": "css:h2::text",
                               "node": "/html/body/div/div[1]/h2/text()[1]",
                               "text": "Lamp", "span": [lamp_1, lamp_1 + 4]}]  # fmt: skip
    assert span_of(second["title"][0]) == (lamp_2, lamp_2 + 4)
    # Whitespace kept in the text (and span); the value is what re and type make of it.
    price = listing.index(" $1,299.00 ")
    assert first["price"][0]["text"] == " $1,299.00 "
    assert span_of(first["price"][0]) == (price, price + len(" $1,299.00 "))
    # Attribute values, either quote.
    href_1 = listing.index('"/shop/item/1.html"') + 1
    href_2 = listing.index("'item/2.html'") + 1
    assert span_of(first["link"][0]) == (href_1, href_1 + len("/shop/item/1.html"))
    assert first["link"][0]["node"] == "/html/body/div/div[1]/a/@href"
    assert span_of(second["link"][0]) == (href_2, href_2 + len("item/2.html"))
    # "&amp;" decoded to "&" is not verbatim in the body: no span, never a wrong one.
    assert salt["title"][0]["text"] == "Salt & Pepper"
    assert "span" not in salt["title"][0]
    assert salt["price"][0]["reason"] == "the text does not match re '([0-9.,]+)'"
    # many: one evidence entry per value, in node order.
    assert [e["text"] for e in first["tags"]] == ["home", "light"]
    # Every span given holds its text exactly.
    bodies = {server.url(path): body for path, body in product_site.PAGES.items()}
    for item in items:
        for entries in item["evidence"].values():
            for entry in entries:
                if "span" in entry:
                    start, end = entry["span"]
                    assert bodies[item["url"]][start:end] == entry["text"]
    stock = items[4]["evidence"]["stock"][0]
    assert stock["reason"] == "not an integer: 'none left'"


@pytest_twisted.ensureDeferred
async def test_replay_without_the_server_at_any_concurrency_gives_the_same_bytes(
    server, crawl, tmp_path
):
    server.site(product_site.PAGES)
    settings = extract_settings(tmp_path)
    await crawl(settings=settings, url=server.url("/"), source_id="site")
    captured = items_file(tmp_path).read_bytes()
    server.shutdown()
    server.server_close()
    replays = []
    for concurrency in (1, 16):
        items_dir = tmp_path / f"items-{concurrency}"
        replay = {**settings, "TRAVERSE_MODE": "replay", "CONCURRENT_REQUESTS": concurrency,
                  "TRAVERSE_ITEMS_DIR": str(items_dir)}  # fmt: skip
        await crawl(settings=replay, url=server.url("/"), source_id="site")
        (path,) = items_dir.glob("*.jsonl")
        replays.append(path.read_bytes())
    assert replays == [captured, captured]
    assert captured.count(b"\n") == 5


@pytest_twisted.ensureDeferred
async def test_live_mode_extracts_the_same_items(server, crawl, tmp_path):
    server.site(product_site.PAGES)
    settings = extract_settings(tmp_path)
    await crawl(settings=settings, url=server.url("/"), source_id="site")
    captured = items_file(tmp_path).read_bytes()
    live = {**settings, "TRAVERSE_MODE": "live", "TRAVERSE_ITEMS_DIR": str(tmp_path / "live")}
    result = await crawl(settings=live, url=server.url("/"), source_id="site")
    (path,) = (tmp_path / "live").glob("*.jsonl")
    # fetchedAt differs between the two fetches, hence the sourceRefs: all else is equal.
    strip = [{k: v for k, v in item.items() if k != "sourceRef"} for item in lines(path)]
    assert strip == [{k: v for k, v in json.loads(line).items() if k != "sourceRef"}
                     for line in captured.splitlines()]  # fmt: skip
    check_items(lines(path), server, result.manifest)


class ShopSpider(TraverseSpider):
    """The example of docs/extraction.md: the same rules and evidence from Python."""

    name = "shop"
    rules_path = ""

    def parse_page(self, response: Any, page: dict[str, Any]) -> Any:
        if not hasattr(self, "extractor"):
            self.extractor = Extractor(self.rules_path)
        for item in self.extractor.extract_page(response, page):
            if item["type"] == "product" and "stock" in item["missing"]:
                item["fields"]["stock"] = 0  # the spider's own rule, on top of the file's
            yield item


@pytest_twisted.ensureDeferred
async def test_parse_page_extracts_the_same_items_with_the_public_api(server, crawl, tmp_path):
    server.site(product_site.PAGES)
    ShopSpider.rules_path = rules_file(tmp_path)
    result = await crawl(spidercls=ShopSpider, url=server.url("/"), source_id="site")
    yielded = [item for item in result.items if "evidence" in item]
    manifest = result.manifest
    order = {page["url"]: n for n, page in enumerate(manifest["pages"])}
    yielded.sort(key=lambda item: order[item["url"]])  # arrival order: any
    want = expected_items(server.url)
    want[4][2]["stock"] = 0
    assert [(i["type"], i["url"], i["fields"]) for i in yielded] == [
        (t, server.url(p), f) for t, p, f, _ in want
    ]
    assert all(i["sourceRef"] == manifest["pages"][order[i["url"]]]["sourceRef"] for i in yielded)
    assert not (tmp_path / "items").exists()  # no TRAVERSE_EXTRACT: no items file
