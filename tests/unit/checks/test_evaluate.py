"""Each check kind passes and fails as its threshold says, with examples that point at
the value's evidence; memory is counts and digests, never items."""

from __future__ import annotations

import json
from typing import Any

import pytest

from traverse_crawl.checks.evaluate import SeedEvaluator
from traverse_crawl.checks.rules import checks_from_bytes


def page(url: str, kind: str = "ok", content_type: str = "html", status: int = 0) -> dict[str, Any]:
    if kind == "ok":
        snapshot = {"status": 200, "contentType": content_type}
        return {"url": url, "fetch": {"snapshot": snapshot}, "sourceRef": f"ref:{url}"}
    error: dict[str, Any] = {"kind": kind, "message": "m"}
    if status:
        error["status"] = status
    return {"url": url, "fetch": {"error": error}}


def line(url: str, fields: dict[str, Any], evidence: dict[str, Any] | None = None) -> bytes:
    item = {"type": "product", "url": url, "sourceRef": f"ref:{url}", "fields": fields,
            "missing": [], "evidence": evidence or {}}  # fmt: skip
    return json.dumps(item).encode() + b"\n"


def run(checks: bytes, lines: list[bytes], pages: list[dict[str, Any]]) -> dict[str, Any]:
    evaluator = SeedEvaluator(checks_from_bytes(checks), "shop")
    evaluator.add_lines(lines)
    evaluator.add_pages(pages)
    return {r["check"]: r for r in evaluator.results()}


PAGES = [page("u0"), page("u1"), page("u2", "http-error", status=404), page("u3", "timeout")]


@pytest.mark.parametrize(("minimum", "passed"), [(4, True), (5, False)])
def test_min_pages(minimum: int, passed: bool) -> None:
    result = run(f"[crawl]\nmin_pages = {minimum}\n".encode(), [], PAGES)["crawl.min_pages"]
    assert (result["measured"], result["threshold"], result["passed"]) == (4, minimum, passed)
    if not passed:
        assert [e["url"] for e in result["examples"]] == ["u0", "u1", "u2", "u3"]


@pytest.mark.parametrize(("share", "passed"), [(0.25, True), (0.2, False)])
def test_max_share(share: float, passed: bool) -> None:
    checks = f"[crawl]\nmax_share = {{ http-error = {share}, blocked = 0.0 }}\n".encode()
    results = run(checks, [], PAGES)
    result = results["crawl.max_share.http-error"]
    assert (result["measured"], result["passed"]) == (0.25, passed)
    assert results["crawl.max_share.blocked"]["passed"]
    assert results["crawl.max_share.blocked"]["measured"] == 0.0
    if not passed:
        assert result["examples"] == [{"url": "u2", "field": "outcome", "value": "http-error 404"}]


def test_min_items_names_the_html_pages_that_gave_none() -> None:
    lines = [line("u0", {"sku": "A"})]
    pages = [*PAGES, page("u4", content_type="pdf"), page("u5")]
    results = run(b"[items.product]\nmin_items = 3\n", lines, pages)
    result = results["items.product.min_items"]
    assert (result["measured"], result["passed"]) == (1, False)
    assert [e["url"] for e in result["examples"]] == ["u1", "u5"]
    assert run(b"[items.product]\nmin_items = 1\n", lines, pages)["items.product.min_items"][
        "passed"
    ]


def test_coverage_with_the_evidence_of_a_value_that_did_not_convert() -> None:
    why = {"price": [{"selector": "css:.price::text", "text": "call us", "span": [10, 17],
                      "type": "number", "reason": "not a number"}]}  # fmt: skip
    lines = [line("u0", {"price": 1.0}), line("u1", {}, why), line("u2", {"price": 2}),
             line("u3", {"price": 3})]  # fmt: skip
    result = run(b"[items.product]\ncoverage = { price = 0.8 }\n", lines, [])[
        "items.product.coverage.price"
    ]
    assert (result["measured"], result["over"], result["passed"]) == (0.75, 4, False)
    assert result["examples"] == [
        {"url": "u1", "sourceRef": "ref:u1", "field": "price", "value": None, "text": "call us",
         "span": [10, 17], "reason": "not a number"}
    ]  # fmt: skip
    passing = run(b"[items.product]\ncoverage = { price = 0.75 }\n", lines, [])
    assert passing["items.product.coverage.price"]["passed"]


def test_distinct_names_the_repeats() -> None:
    lines = [line("u0", {"sku": "A"}), line("u1", {"sku": "B"}), line("u2", {"sku": "A"}),
             line("u3", {})]  # fmt: skip
    result = run(b"[items.product]\ndistinct = ['sku']\n", lines, [])["items.product.distinct.sku"]
    assert (result["measured"], result["passed"]) == (1, False)
    assert [(e["url"], e["value"]) for e in result["examples"]] == [("u2", "A")]
    ok = run(b"[items.product]\ndistinct = ['sku']\n", lines[:2], [])
    assert ok["items.product.distinct.sku"]["passed"]


def test_values_range_and_pattern_with_spans_of_many_values() -> None:
    evidence = {"sku": [{"text": "ab", "span": [1, 3]}, {"text": "z", "reason": "r"},
                        {"text": "CD-1", "span": [5, 9]}]}  # fmt: skip
    lines = [line("u0", {"price": 5, "sku": ["ab", "CD-1"]}, evidence),
             line("u1", {"price": 0, "sku": ["X"]}), line("u2", {"price": "5"})]  # fmt: skip
    checks = b"""
[items.product.values]
price = { min = 0.01, max = 10 }
sku = { pattern = '[A-Z0-9-]+' }
"""
    results = run(checks, lines, [])
    price = results["items.product.values.price"]
    assert (price["measured"], price["over"], price["passed"]) == (2, 3, False)
    assert [(e["url"], e["problem"]) for e in price["examples"]] == [
        ("u1", "below min 0.01"), ("u2", "not a number")
    ]  # fmt: skip
    sku = results["items.product.values.sku"]
    assert (sku["measured"], sku["over"]) == (1, 3)
    (example,) = sku["examples"]
    assert (example["value"], example["text"], example["span"]) == ("ab", "ab", [1, 3])
    good = run(checks, [line("u0", {"price": 10, "sku": ["CD-1"]})], [])
    assert all(r["passed"] for r in good.values())


def test_zero_items_pass_except_min_items() -> None:
    checks = b"""
[items.product]
min_items = 1
coverage = { price = 1.0 }
distinct = ['sku']
[items.product.values]
price = { min = 1 }
"""
    results = run(checks, [], [page("u0")])
    assert not results.pop("items.product.min_items")["passed"]
    assert all(r["passed"] and r["over"] == 0 for r in results.values())


def test_not_evaluated_when_the_items_file_is_lost() -> None:
    evaluator = SeedEvaluator(checks_from_bytes(b"[items.product]\nmin_items = 0\n"), "s")
    (result,) = evaluator.results(items=False, why_not="the items file was not written")
    assert result["measured"] is None and result["passed"] is False
    assert result["reason"] == "the items file was not written"


def test_at_most_five_examples_and_a_digest_per_distinct_value() -> None:
    lines = [line(f"u{n}", {"sku": "same"}) for n in range(50)]
    evaluator = SeedEvaluator(checks_from_bytes(b"[items.product]\ndistinct = ['sku']\n"), "s")
    evaluator.add_lines(lines)
    (result,) = evaluator.results()
    assert result["measured"] == 49 and len(result["examples"]) == 5
    assert len(evaluator.types["product"].seen["sku"]) == 1


def test_a_line_read_without_its_evidence_gives_the_same_results() -> None:
    """The fields are read from the line's head; the evidence only for an example, the
    same as from the whole line, a field named "extractor" included."""
    why = {"price": [{"text": "call us", "span": [10, 17], "reason": "not a number"}],
           "extractor": [{"text": 'x,"extractor":"', "span": [1, 2]}]}  # fmt: skip
    item = {"type": "product", "pageId": "p", "url": "u1", "sourceRef": "ref:u1",
            "fields": {"extractor": "a", "sku": "A"}, "missing": ["price"],
            "extractor": "sha256:0", "evidence": why}  # fmt: skip
    ours = json.dumps(item, separators=(",", ":")).encode() + b"\n"
    reordered = json.dumps(dict(reversed(list(item.items())))).encode() + b"\n"
    checks = b"[items.product]\ncoverage = { price = 1.0 }\ndistinct = ['sku']\n"
    got = [run(checks, [line, line], []) for line in (ours, reordered)]
    assert got[0] == got[1]
    (example,) = got[0]["items.product.coverage.price"]["examples"][:1]
    assert (example["text"], example["span"]) == ("call us", [10, 17])
    assert got[0]["items.product.distinct.sku"]["measured"] == 1


def test_a_users_own_items_by_class_name_through_itemadapter() -> None:
    """Any item ItemAdapter accepts: its type is its class name, its fields its own."""
    import dataclasses

    import scrapy

    @dataclasses.dataclass
    class Product:
        name: str | None
        price: float | None
        sourceRef: str | None = None

    class Review(scrapy.Item):
        stars = scrapy.Field()
        sourceRef = scrapy.Field()

    checks = b"""
[items.Product]
coverage = { price = 1.0 }
[items.Review.values]
stars = { min = 1, max = 5 }
"""
    evaluator = SeedEvaluator(checks_from_bytes(checks), "mine")
    ref = (
        "traverse-snapshot:mine%3A%3Ahttp%3A%2F%2Fx%2Fa?url=http%3A%2F%2Fx%2Fa&sha256=0&fetchedAt=t"
    )
    evaluator.add(Product("Lamp", 10.0, ref))
    evaluator.add(Product("Chair", None, ref))
    evaluator.add(Review(stars=9, sourceRef=ref))
    evaluator.add({"anything": "else"})  # a type the checks do not name
    results = {r["check"]: r for r in evaluator.results()}
    coverage = results["items.Product.coverage.price"]
    assert (coverage["measured"], coverage["passed"]) == (0.5, False)
    assert coverage["examples"] == [
        {"url": "http://x/a", "sourceRef": ref, "field": "price", "value": None}
    ]
    stars = results["items.Review.values.stars"]
    assert stars["examples"][0]["problem"] == "above max 5"
