"""Hostile pages: link discovery bounded in attributes and nesting, a frontier compact per URL."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.html import MAX_ATTRIBUTES, MAX_DEPTH
from traverse_crawl.crawl.links import find_links

ORIGIN = "http://site.test"


def attribute_bomb(attributes: int) -> str:
    filler = " ".join(f"a{i}=1" for i in range(attributes))
    return f'<p>hostile</p><a href="/next" {filler}>x</a><a href="/after">y</a>'


def test_attribute_bomb_is_cut_with_a_warning():
    links, warnings = find_links(attribute_bomb(250_000), ORIGIN + "/", ORIGIN)
    assert links == [ORIGIN + "/next", ORIGIN + "/after"]
    assert warnings == [
        f"1 tag(s) with more than {MAX_ATTRIBUTES} attributes: "
        f"attributes after the first {MAX_ATTRIBUTES} were not read"
    ]


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


def test_frontier_keeps_urls_past_the_page_budget_compactly():
    frontier = Frontier("s", ORIGIN + "/", 500, 3, "live")
    frontier.admit()
    tracemalloc.start()
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    links = [f"{ORIGIN}/catalogue/item/{i:08d}?ref=listing" for i in range(50_000)]
    frontier.record(0, Outcome({"snapshot": {}}, links=links))
    del links
    gc.collect()
    per_url = (tracemalloc.get_traced_memory()[0] - before) / 50_000
    tracemalloc.stop()
    assert len(frontier.queue) == 500
    assert frontier.remaining == 50_000  # every distinct URL still counted once
    frontier.record(
        1, Outcome({"snapshot": {}}, links=[f"{ORIGIN}/catalogue/item/{0:08d}?ref=listing"])
    )
    assert frontier.remaining == 50_000 - 1  # page 1 recorded; nothing new discovered
    assert per_url < 120, per_url
