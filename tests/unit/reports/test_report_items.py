"""Pure tests of the report's items section: counts, bounds, escaping."""

from __future__ import annotations

import io
import json
import re
import tracemalloc

from traverse_crawl.reports import html as reporthtml
from traverse_crawl.reports import model
from traverse_crawl.reports.items_file import scan
from traverse_crawl.reports.model import build_seed, items_summary

SITE = "https://shop.test"


def page(path: str, ctype: str = "html") -> dict:
    url = SITE + path
    return {
        "id": "shop::" + url,
        "url": url,
        "depth": 1,
        "fetch": {"snapshot": {"status": 200, "contentType": ctype, "bodyHash": "0" * 64}},
        "sourceRef": f"traverse-snapshot:shop::{url}",
    }


PAGES = [page("/"), page("/a"), page("/b"), page("/logo.png", "png")]
MANIFEST = {"seed": {"id": "shop", "url": SITE + "/"}, "pages": PAGES, "warnings": []}


def item(path: str, type_: str, missing: list[str], ref: str | None = None) -> dict:
    return {
        "type": type_,
        "url": SITE + path,
        "sourceRef": ref or f"traverse-snapshot:shop::{SITE}{path}",
        "fields": {"title": "t"},
        "missing": missing,
    }


def lines(*rows: dict | str) -> io.BytesIO:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    return io.BytesIO(text.encode("utf-8"))


def test_items_per_type_and_fields_most_often_missing():
    rows = [
        item("/", "card", ["price"]),
        item("/", "card", ["price", "tags"]),
        item("/", "card", []),
        item("/a", "card", ["price"]),
        item("/a", "page", ["author"]),
        "not an item",
        item("/gone", "card", [], ref="traverse-snapshot:other::x"),
    ]
    got = items_summary(scan(lines(*rows)), MANIFEST, "shop.jsonl")
    assert got.total == 6
    assert got.by_type == [("card", 5), ("page", 1)]
    assert got.most_missing == [
        ("card", "price", 3, 5),
        ("page", "author", 1, 1),
        ("card", "tags", 1, 5),
    ]
    assert (got.pages, got.html_pages) == (2, 3)  # the png is not extracted
    assert (got.foreign, got.unreadable, got.capped) == (1, 1, False)


def test_distinct_names_are_bounded(monkeypatch):
    monkeypatch.setattr(model, "MAX_NAMES", 3)
    rows = [item("/", f"type{i}", [f"f{i}"]) for i in range(10)]
    got = items_summary(scan(lines(*rows)), MANIFEST, "x")
    assert got.total == 10
    assert got.by_type[0] == (model.OTHER, 7)
    assert len(got.by_type) == 4 and got.capped
    html = reporthtml.items_section(got)
    assert "More distinct types or fields than are counted one by one" in html


def test_counting_holds_no_item(tmp_path):
    # 20 MB of items: the summary's memory is its counters, not the file.
    path = tmp_path / "shop.jsonl"
    row = json.dumps({**item("/", "card", ["price"]), "fields": {"body": "w" * 10_000}})
    path.write_text((row + "\n") * 2_000, encoding="utf-8")
    tracemalloc.start()
    with path.open("rb") as handle:
        got = items_summary(scan(handle), MANIFEST, str(path))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert got.total == 2_000 and got.most_missing == [("card", "price", 2_000, 2_000)]
    assert peak < 1_000_000, peak


def test_section_in_the_seed_and_every_name_escaped():
    hostile = '<script>alert("x")</script>'
    rows = [item("/", hostile, [hostile]), item("/", "card", [])]
    seed = build_seed(MANIFEST, "shop.json")
    seed.items = items_summary(scan(lines(*rows)), MANIFEST, hostile + ".jsonl")
    html = reporthtml.page([seed], ["shop.json"], None)
    assert '<h3>Extracted items (<span class="items-total">2</span>)</h3>' in html
    assert "1 of the manifest's 3 html page(s) yielded items." in html
    assert "<script" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert re.search(r'="[^"]*<', html) is None
    row = "<tr><td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td><td>&lt;script&gt;"
    assert row in html and '<td class="n">1</td><td class="n">100 %</td>' in html


def test_no_items_and_no_missing_field_say_so():
    empty = items_summary(scan(lines()), MANIFEST, "x")
    assert '<p class="empty">No items.</p>' in reporthtml.items_section(empty)
    full = items_summary(scan(lines(item("/", "card", []))), MANIFEST, "x")
    assert "Every field matched on every item." in reporthtml.items_section(full)
    assert build_seed(MANIFEST, "m").items is None
