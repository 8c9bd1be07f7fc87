"""Pure tests of the frontier: admission, in-order commit, caps, persistence."""

from __future__ import annotations

import itertools

import pytest

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.jobdir import state as jobstate

SEED = "https://h.test/"
GRAPH = {
    "https://h.test/": ["https://h.test/a", "https://h.test/b", "https://h.test/c"],
    "https://h.test/a": ["https://h.test/d", "https://h.test/b"],
    "https://h.test/b": ["https://h.test/e", "https://h.test/"],
    "https://h.test/c": ["https://h.test/f"],
    "https://h.test/d": ["https://h.test/g"],
    "https://h.test/e": [],
    "https://h.test/f": ["https://h.test/h"],
}


def ok(url: str) -> Outcome:
    return Outcome({"snapshot": {"url": url}}, links=list(GRAPH.get(url, [])))


def sequential(max_pages: int, max_depth: int) -> dict:
    """Traverse's loop: one page at a time, in queue order."""
    frontier = Frontier("s", SEED, max_pages, max_depth, "live")
    pending = frontier.admit()
    while pending:
        adm = pending.pop(0)
        outcome = ok(adm.url) if frontier.may_follow(adm.depth) else Outcome({"snapshot": {}})
        _, more = frontier.record(adm.index, outcome)
        pending.extend(more)
    assert frontier.finished
    return frontier.manifest()


def shuffled(max_pages: int, max_depth: int, order: int) -> dict:
    """Outcomes recorded in a scrambled order: the manifest must not change."""
    frontier = Frontier("s", SEED, max_pages, max_depth, "live")
    pending = frontier.admit()
    step = 0
    while pending:
        step += 1
        adm = pending.pop((order * step) % len(pending))
        outcome = ok(adm.url) if frontier.may_follow(adm.depth) else Outcome({"snapshot": {}})
        _, more = frontier.record(adm.index, outcome)
        pending.extend(more)
    assert frontier.finished
    return frontier.manifest()


@pytest.mark.parametrize(
    ("max_pages", "max_depth"), list(itertools.product([0, 1, 3, 5, 8, 50], [0, 1, 2, 5]))
)
def test_any_arrival_order_gives_the_sequential_manifest(max_pages, max_depth):
    expected = sequential(max_pages, max_depth)
    for order in (1, 2, 3, 5, 7):
        assert shuffled(max_pages, max_depth, order) == expected


def test_bfs_order_and_cap_warning():
    manifest = sequential(4, 5)
    assert [(p["url"], p["depth"]) for p in manifest["pages"]] == [
        ("https://h.test/", 0),
        ("https://h.test/a", 1),
        ("https://h.test/b", 1),
        ("https://h.test/c", 1),
    ]
    assert manifest["truncated"] is True
    assert manifest["warnings"] == [
        "maxPages cap (4) reached; 3 further URL(s) discovered but not fetched"
    ]


def test_zero_pages():
    manifest = sequential(0, 2)
    assert manifest["pages"] == [] and manifest["truncated"] is True
    assert manifest["warnings"] == [
        "maxPages cap (0) reached; 1 further URL(s) discovered but not fetched"
    ]


def test_duplicate_and_stray_outcomes_are_ignored():
    frontier = Frontier("s", SEED, 5, 2, "live")
    (seed,) = frontier.admit()
    committed, admitted = frontier.record(seed.index, ok(SEED))
    assert len(committed) == 1 and len(admitted) == 3
    assert frontier.record(seed.index, ok(SEED)) == ([], [])
    assert frontier.record(99, ok(SEED)) == ([], [])
    assert len(frontier.pages) == 1


def test_warnings_in_page_order_with_store_failure_first():
    frontier = Frontier("s", SEED, 2, 2, "capture")
    (seed,) = frontier.admit()
    _, admitted = frontier.record(
        seed.index,
        Outcome({"snapshot": {}, "warnings": ["retry 1/2 for x after timeout"]},
                links=["https://h.test/a"]),
    )  # fmt: skip
    frontier.record(admitted[0].index, Outcome({"snapshot": {}}, offhost_final_url="https://o/"))
    frontier.note_store_failure(0, "disk full")
    assert frontier.manifest()["warnings"] == [
        "[depth 0] https://h.test/: store.put failed (disk full); "
        "page fetch result kept, snapshot not persisted",
        "[depth 0] https://h.test/: retry 1/2 for x after timeout",
        "[depth 1] https://h.test/a: fetched page resolved off-host (https://o/); "
        "its links were not followed",
    ]


def test_each_page_names_the_page_that_discovered_it():
    frontier = Frontier("s", SEED, 50, 5, "live")
    pending = frontier.admit()
    while pending:
        adm = pending.pop(0)
        _, more = frontier.record(adm.index, ok(adm.url))
        pending.extend(more)
    parents = {p["url"]: p.get("discoveredFrom") for p in frontier.manifest()["pages"]}
    assert parents == {
        "https://h.test/": None,  # the seed: the field is absent
        "https://h.test/a": "https://h.test/",
        "https://h.test/b": "https://h.test/",  # first discovery wins (a links b later)
        "https://h.test/c": "https://h.test/",
        "https://h.test/d": "https://h.test/a",
        "https://h.test/e": "https://h.test/b",
        "https://h.test/f": "https://h.test/c",
        "https://h.test/g": "https://h.test/d",
        "https://h.test/h": "https://h.test/f",
    }
    assert "discoveredFrom" not in frontier.manifest()["pages"][0]


def test_discoverers_and_body_sizes_survive_a_resume():
    frontier = Frontier("s", SEED, 6, 3, "live")
    adm = frontier.admit()[0]
    outcome = Outcome({"snapshot": {}}, links=list(GRAPH[SEED]), body_size=42)
    frontier.record(adm.index, outcome)
    records = [jobstate.page_record(0, adm.index, (adm.url, adm.depth), outcome, None)]
    restored = Frontier("s", SEED, 6, 3, "live")
    restored.admit()
    jobstate.replay({0: restored}, records)
    assert restored.pages == frontier.pages and restored.pages[0]["bodySize"] == 42
    (nxt, *_) = restored.outstanding()
    restored.record(nxt.index, ok(nxt.url))
    assert restored.pages[1]["discoveredFrom"] == SEED


def test_sitemap_urls_have_no_discoverer():
    frontier = Frontier("s", SEED, 50, 2, "live")
    assert frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    _, pending = frontier.record(seed.index, ok(SEED))
    pending += frontier.add_sitemap_urls(["https://h.test/orphan", "https://h.test/a"], [])[1]
    while pending:
        adm = pending.pop(0)
        _, more = frontier.record(adm.index, ok(adm.url) if adm.depth < 2 else Outcome({}))
        pending.extend(more)
    pages = {p["url"]: p for p in frontier.manifest()["pages"]}
    assert pages["https://h.test/orphan"]["depth"] == 1
    assert "discoveredFrom" not in pages["https://h.test/orphan"]
    assert pages["https://h.test/a"]["discoveredFrom"] == SEED  # a link came first
