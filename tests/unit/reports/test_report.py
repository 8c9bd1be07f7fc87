"""Pure tests of the report model, the tree layout and the HTML escaping."""

from __future__ import annotations

import re

import pytest

from traverse_crawl.reports import html as reporthtml
from traverse_crawl.reports import svg as reportsvg
from traverse_crawl.reports.diff import diff
from traverse_crawl.reports.model import Node, build_seed, derive_parents, tree

SITE = "https://h.test"


def page(path: str, depth: int, parent: str | None = None, error: str | None = None,
         size: int | None = None, ctype: str = "html", status: int = 200) -> dict:  # fmt: skip
    out: dict = {"id": "s::" + SITE + path, "url": SITE + path, "depth": depth}
    if parent is not None:
        out["discoveredFrom"] = SITE + parent
    if error:
        kind, _, code = error.partition(" ")
        out["fetch"] = {"error": {"kind": kind, "message": "m", **({"status": int(code)} if code
                                                                   else {})}}  # fmt: skip
    else:
        out["fetch"] = {"snapshot": {"status": status, "contentType": ctype,
                                     "bodyHash": path.ljust(64, "0")}}  # fmt: skip
        if size is not None:
            out["bodySize"] = size
    return out


PAGES = [
    page("/", 0, size=500),
    page("/a", 1, "/", size=9000),
    page("/b", 1, "/", error="http-error 404"),
    page("/c.png", 1, "/", size=70000, ctype="png"),
    page("/a/1", 2, "/a", size=10),
    page("/a/2", 2, "/a", error="timeout"),
]
MANIFEST = {"seed": {"id": "s", "url": SITE + "/"}, "mode": "capture", "pages": PAGES,
            "warnings": ["[depth 1] https://h.test/b: retry 1/2"], "truncated": False}  # fmt: skip


def test_totals_depths_and_largest_pages():
    seed = build_seed(MANIFEST, "m.json")
    assert (seed.pages, seed.failed) == (6, 2)
    assert seed.by_outcome == [("ok", 4), ("http-error", 1), ("timeout", 1)]
    assert seed.by_status == [("200", 4), ("404", 1), ("no response", 1)]
    assert seed.by_type == [("html", 3), ("png", 1)]
    assert seed.by_depth == [(0, 1, 0), (1, 2, 1), (2, 1, 1)]
    assert seed.largest[:2] == [(SITE + "/c.png", 70000, "png"), (SITE + "/a", 9000, "html")]
    assert seed.warnings == MANIFEST["warnings"]


def test_a_manifest_claiming_a_huge_depth_is_charted_at_the_depths_it_has():
    """899 bytes claiming depth 3x10^7 must not build a chart of 3x10^7 columns."""
    deep = {**MANIFEST, "pages": [page("/", 0), page("/far", 30_000_000, "/", error="timeout")]}
    assert build_seed(deep, "m.json").by_depth == [(0, 1, 0), (30_000_000, 0, 1)]
    gap = {**MANIFEST, "pages": [page("/", 0), page("/x", 2, "/")]}  # a gap a crawl can leave
    assert build_seed(gap, "m.json").by_depth == [(0, 1, 0), (1, 0, 0), (2, 1, 0)]


def test_tree_hangs_pages_under_their_discoverer_and_marks_failures():
    nodes = tree(PAGES)
    assert [(n.parent, n.failed, n.inferred) for n in nodes] == [
        (-1, False, False), (0, False, False), (0, True, False), (0, False, False),
        (1, False, False), (1, True, False),
    ]  # fmt: skip
    assert nodes[2].outcome == "http-error 404"


def test_a_page_without_discoverer_hangs_under_the_seed_dashed():
    pages = [page("/", 0), page("/x", 2)]  # no discoveredFrom (an older manifest)
    assert [(n.parent, n.inferred) for n in tree(pages)] == [(-1, False), (0, True)]
    svg = reportsvg.crawl_tree(tree(pages))
    assert 'class="edge inferred"' in svg and svg.count("<circle") == 2


def test_derive_parents_replays_link_discovery_first_wins():
    pages = [page("/", 0), page("/a", 1), page("/b", 1), page("/b/1", 2), page("/gone", 1)]
    links = {
        SITE + "/": [SITE + "/a", SITE + "/b"],
        SITE + "/a": [SITE + "/b", SITE + "/b/1", SITE + "/"],
    }
    filled = derive_parents(pages, lambda p: links.get(p["url"]))
    assert filled == 3
    parents = [p.get("discoveredFrom") for p in pages]
    assert parents == [None, SITE + "/", SITE + "/", SITE + "/a", None]


def test_derive_parents_leaves_a_page_no_link_could_have_queued():
    # /orphan came from a sitemap at depth 1; /a links it, but a link from depth 1
    # would have queued it at depth 2.
    pages = [page("/", 0), page("/a", 1), page("/orphan", 1)]
    links = {SITE + "/": [SITE + "/a"], SITE + "/a": [SITE + "/orphan"]}
    assert derive_parents(pages, lambda p: links.get(p["url"])) == 1
    assert "discoveredFrom" not in pages[2]


def test_siblings_keep_bfs_order_inside_their_parents_share():
    nodes = tree(PAGES)
    # Four leaves: /a's two children, /b, /c.png. /a takes the first half, its
    # children split it; /b and /c.png a quarter each, in BFS order.
    assert reportsvg.spans(nodes) == [0.5, 0.25, 0.625, 0.875, 0.125, 0.375]


@pytest.mark.parametrize("count", [1, 30, 41, 500, reportsvg.DRAW_LIMIT + 250])
def test_one_node_per_drawn_page_and_a_summary_beyond_the_limit(count):
    nodes = [Node(f"{SITE}/p{i}", 0 if i == 0 else 1 + (i > 60), 0 if i <= 60 else 1 + i % 60,
                  i % 7 == 3, "200 html") for i in range(count)]  # fmt: skip
    nodes[0] = Node(SITE + "/", 0, -1, False, "200 html")
    svg = reportsvg.crawl_tree(nodes)
    drawn = min(count, reportsvg.DRAW_LIMIT)
    assert svg.count('<circle class="node') == drawn
    assert svg.count('class="node fail"') == sum(1 for n in nodes[:drawn] if n.failed)
    assert ("radial" in svg) == (count > reportsvg.LABELLED)
    hidden = reportsvg.not_drawn(nodes)
    assert sum(n for _, n in hidden) == count - drawn


HOSTILE = '<script>alert("x")</script>'


def test_every_text_from_the_crawl_is_escaped():
    evil = [
        page("/", 0, size=1),
        {**page("/q", 1, "/", error="http-error 500"), "url": SITE + "/" + HOSTILE},
        {**page("/t", 1, "/", size=5, ctype=HOSTILE)},
    ]
    manifest = {"seed": {"id": HOSTILE, "url": HOSTILE}, "mode": HOSTILE, "pages": evil,
                "warnings": [HOSTILE, "<img src=x onerror=alert(1)>"]}  # fmt: skip
    changes = diff([{**manifest, "pages": evil[:1]}], [manifest])
    html = reporthtml.page([build_seed(manifest, HOSTILE, changes)], [HOSTILE], [HOSTILE])
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    # No attribute value is left open by a quote from the crawl.
    assert re.search(r'="[^"]*<', html) is None


def test_origins_that_pushed_back_are_counted_from_retries_and_outcomes():
    retried = page("/r", 1, "/")
    retried["fetch"]["warnings"] = [
        f"retry 1/2 for {SITE}/r after HTTP 429",
        f"retry 2/2 for {SITE}/r after a block page",
    ]
    other = "https://other.test"
    pages = [
        page("/", 0),
        retried,
        page("/busy", 1, "/", error="http-error 503"),
        page("/gone", 1, "/", error="http-error 404"),
        page("/wall", 1, "/", error="blocked 403"),
        page("/unsent", 1, "/", error="blocked"),  # given up: no answer of its own
        {**page("/x", 1, "/", error="http-error 429"), "url": other + "/x"},
    ]
    seed = build_seed({**MANIFEST, "pages": pages}, "m.json")
    assert seed.pushed_back == [(SITE, 4), (other, 1)]
    html = reporthtml.page([seed], ["m.json"], None)
    assert "Origins that pushed back" in html and 'class="totals-pushed-back"' in html
    assert "Origins that pushed back" not in reporthtml.page(
        [build_seed(MANIFEST, "m.json")], ["m.json"], None
    )
