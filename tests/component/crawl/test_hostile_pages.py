"""Hostile pages (issue 10 items 1-3): bounded link discovery and a compact frontier."""

from __future__ import annotations

import gc
import itertools
import tracemalloc

import pytest
import pytest_twisted

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.html import MAX_ATTRIBUTES, MAX_DEPTH
from traverse_crawl.crawl.links import find_links

ORIGIN = "http://site.test"


# -- item 1: a tag with a quarter of a million attributes --------------------------------


def _attribute_bomb(attributes: int) -> str:
    filler = " ".join(f"a{i}=1" for i in range(attributes))
    return f'<p>hostile</p><a href="/next" {filler}>x</a><a href="/after">y</a>'


def test_attribute_bomb_is_cut_with_a_warning():
    links, warnings = find_links(_attribute_bomb(250_000), ORIGIN + "/", ORIGIN)
    assert links == [ORIGIN + "/next", ORIGIN + "/after"]
    assert warnings == [
        f"1 tag(s) with more than {MAX_ATTRIBUTES} attributes: "
        f"attributes after the first {MAX_ATTRIBUTES} were not read"
    ]


@pytest_twisted.ensureDeferred
async def test_hostile_page_does_not_delay_another_seed(server, server2, crawl, tmp_path):
    bomb = _attribute_bomb(250_000)  # 2.6 MB, a minute of libxml2 time unbounded
    server.site({"/": bomb, "/next": "n", "/after": "a"})
    server2.site(
        {
            "/": "".join(f'<a href="/p{i}">p</a>' for i in range(8)),
            **{f"/p{i}": "page" for i in range(8)},
        }
    )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"hostile\t{server.url('/')}\ncalm\t{server2.url('/')}\n")
    result = await crawl(settings={"TRAVERSE_MIN_DELAY": 0.3}, seeds=str(seeds))
    by_id = {m["seed"]["id"]: m for m in result.manifests()}
    hostile, calm = by_id["hostile"], by_id["calm"]
    first = hostile["pages"][0]
    assert "snapshot" in first["fetch"]  # the page keeps its snapshot ...
    assert first["fetch"]["warnings"][0].startswith("1 tag(s) with more than")  # ... and says so
    assert [p["url"] for p in hostile["pages"][1:]] == [server.url("/next"), server.url("/after")]
    assert len(calm["pages"]) == 9
    # Measured at the server: the calm seed's requests never wait more than a
    # second beyond its own delay while the hostile page is processed.
    starts = sorted(h.start for h in server2.hits if h.path != "/robots.txt")
    assert max(b - a for a, b in itertools.pairwise(starts)) < 0.3 + 1.0


# -- item 2: deep legacy nesting ----------------------------------------------------------


@pytest.mark.parametrize("tag", ["font", "div", "li", "b", "table", "span"])
def test_links_inside_and_after_deep_nesting_are_found(tag):
    body = "".join(f'<{tag}><a href="/l{i}">x</a>' for i in range(300)) + '<a href="/end">e</a>'
    links, warnings = find_links(body, ORIGIN + "/", ORIGIN)
    assert links == [f"{ORIGIN}/l{i}" for i in range(300)] + [ORIGIN + "/end"]
    assert warnings == []


def test_nesting_past_the_bound_is_a_warning():
    body = "".join(f'<div><a href="/l{i}">x</a>' for i in range(MAX_DEPTH + 100))
    links, warnings = find_links(body, ORIGIN + "/", ORIGIN)
    assert len(links) > MAX_DEPTH - 10
    assert warnings == [
        f"markup nested deeper than {MAX_DEPTH} levels; the page was read only up to that point"
    ]


# -- item 3: links per page and the frontier's per-URL cost --------------------------------


@pytest_twisted.ensureDeferred
async def test_links_per_page_are_capped_with_a_warning(server, crawl):
    server.site({"/": "".join(f'<a href="/p{i}">p</a>' for i in range(50))})
    result = await crawl(
        settings={"TRAVERSE_MAX_LINKS_PER_PAGE": 10, "TRAVERSE_MAX_PAGES": 100},
        url=server.url("/"),
    )
    manifest = result.manifest
    assert [p["url"] for p in manifest["pages"][1:]] == [server.url(f"/p{i}") for i in range(10)]
    warning = (
        "more than 10 links on the page; only the first 10 were followed "
        "(TRAVERSE_MAX_LINKS_PER_PAGE)"
    )
    assert manifest["pages"][0]["fetch"]["warnings"] == [warning]
    assert f"[depth 0] {server.url('/')}: {warning}" in manifest["warnings"]


def test_frontier_keeps_urls_past_the_page_budget_compactly():
    frontier = Frontier("s", ORIGIN + "/", 500, 3, "live")
    frontier.admit()
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    links = [f"{ORIGIN}/catalogue/item/{i:08d}?ref=listing" for i in range(200_000)]
    frontier.record(0, Outcome({"snapshot": {}}, links=links))
    del links
    gc.collect()
    per_url = (tracemalloc.get_traced_memory()[0] - before) / 200_000
    tracemalloc.stop()
    assert len(frontier.queue) == 500
    assert frontier.remaining == 200_000  # every distinct URL still counted once
    frontier.record(
        1, Outcome({"snapshot": {}}, links=[f"{ORIGIN}/catalogue/item/{0:08d}?ref=listing"])
    )
    assert frontier.remaining == 200_000 - 1  # page 1 recorded; nothing new discovered
    assert per_url < 120, per_url
