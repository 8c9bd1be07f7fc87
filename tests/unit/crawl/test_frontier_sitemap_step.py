"""Pure tests of the frontier's sitemap step: sitemap URLs right after the seed's links,
whatever arrives first."""

from __future__ import annotations

import itertools

import pytest

from tests.unit.crawl.test_frontier import GRAPH, SEED, ok
from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.fetch import urls
from traverse_crawl.jobdir import state as jobstate

# In sitemap order: a known link (deduplicated), two orphans, one listed twice.
SITEMAP = ["https://h.test/f", "https://h.test/x", "https://h.test/b", "https://h.test/y"]
WARNINGS = ["sitemap https://h.test/sitemap.xml: HTTP 404"]


def outcome(frontier: Frontier, url: str, depth: int) -> Outcome:
    return ok(url) if frontier.may_follow(depth) else Outcome({"snapshot": {}})


def sequential(max_pages: int, max_depth: int) -> dict:
    """The reference: fetch the seed, read the sitemaps, then the BFS one page at a time."""
    frontier = Frontier("s", SEED, max_pages, max_depth, "live")
    frontier.expect_sitemaps()
    pending = frontier.admit()
    if pending:
        seed = pending.pop(0)
        _, more = frontier.record(seed.index, outcome(frontier, seed.url, seed.depth))
        pending.extend(more)
    _, more = frontier.add_sitemap_urls(SITEMAP, WARNINGS)
    pending.extend(more)
    while pending:
        adm = pending.pop(0)
        _, more = frontier.record(adm.index, outcome(frontier, adm.url, adm.depth))
        pending.extend(more)
    assert frontier.finished
    return frontier.manifest()


def shuffled(max_pages: int, max_depth: int, order: int, sitemap_at: int) -> dict:
    """Outcomes in a scrambled order, the sitemap result arriving at step ``sitemap_at``."""
    frontier = Frontier("s", SEED, max_pages, max_depth, "live")
    frontier.expect_sitemaps()
    pending = frontier.admit()
    step = 0
    delivered = False
    while pending or not delivered:
        step += 1
        if not delivered and (step >= sitemap_at or not pending):
            _, more = frontier.add_sitemap_urls(SITEMAP, WARNINGS)
            delivered = True
        else:
            adm = pending.pop((order * step) % len(pending))
            _, more = frontier.record(adm.index, outcome(frontier, adm.url, adm.depth))
        pending.extend(more)
    assert frontier.finished
    return frontier.manifest()


@pytest.mark.parametrize(
    ("max_pages", "max_depth"), list(itertools.product([0, 1, 2, 4, 6, 9, 50], [0, 1, 2, 5]))
)
def test_any_arrival_order_of_pages_and_sitemaps_gives_the_sequential_manifest(
    max_pages, max_depth
):
    expected = sequential(max_pages, max_depth)
    for order, sitemap_at in itertools.product((1, 2, 3, 5, 7), (1, 2, 3, 5, 8)):
        assert shuffled(max_pages, max_depth, order, sitemap_at) == expected


def test_sitemap_urls_follow_the_seed_links_at_depth_1_deduplicated():
    manifest = sequential(50, 1)
    assert [(p["url"], p["depth"]) for p in manifest["pages"]] == [
        (SEED, 0),
        *((u, 1) for u in GRAPH[SEED]),
        ("https://h.test/f", 1),
        ("https://h.test/x", 1),
        ("https://h.test/y", 1),
    ]
    assert manifest["warnings"] == WARNINGS


def test_seed_links_are_admitted_before_the_sitemaps_but_nothing_after_them_commits():
    frontier = Frontier("s", SEED, 50, 5, "live")
    assert frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    _, admitted = frontier.record(seed.index, ok(SEED))
    assert [a.url for a in admitted] == GRAPH[SEED]  # fetched at once
    first = admitted[0]
    committed, more = frontier.record(first.index, ok(first.url))
    assert committed == [] and more == []  # held: its links would go before the sitemaps
    assert not frontier.finished
    committed, more = frontier.add_sitemap_urls(SITEMAP, [])
    assert [p["url"] for p in committed] == [first.url]
    # The sitemap URLs, then a's new link (its other link, b, is already queued).
    assert [(a.url, a.depth) for a in more] == [
        ("https://h.test/f", 1),
        ("https://h.test/x", 1),
        ("https://h.test/y", 1),
        ("https://h.test/d", 2),
    ]


def test_sitemaps_before_the_seed_page_are_queued_after_its_links():
    frontier = Frontier("s", SEED, 50, 5, "live")
    frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    assert frontier.add_sitemap_urls(SITEMAP, WARNINGS) == ([], [])
    _, admitted = frontier.record(seed.index, ok(SEED))
    assert [a.url for a in admitted] == GRAPH[SEED] + [
        "https://h.test/f",
        "https://h.test/x",
        "https://h.test/y",
    ]


def test_a_seed_without_links_still_gets_its_sitemap_urls_and_waits_for_them():
    frontier = Frontier("s", SEED, 50, 5, "live")
    frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    frontier.record(seed.index, Outcome({"error": {"kind": "http-error"}}))
    assert not frontier.finished  # the sitemaps may still add URLs
    _, admitted = frontier.add_sitemap_urls(["https://h.test/x"], [])
    assert [(a.url, a.depth) for a in admitted] == [("https://h.test/x", 1)]


@pytest.mark.parametrize(("max_pages", "max_depth"), [(0, 2), (5, 0)])
def test_no_sitemap_step_without_budget_or_depth(max_pages, max_depth):
    frontier = Frontier("s", SEED, max_pages, max_depth, "live")
    assert frontier.expect_sitemaps() is False
    assert frontier.add_sitemap_urls(SITEMAP, WARNINGS) == ([], [])
    assert urls.url_hash("https://h.test/x") not in frontier.seen


def test_invalid_seed_has_no_sitemap_step():
    assert Frontier("s", "not a url", 5, 2, "live").expect_sitemaps() is False


def test_sitemap_warnings_follow_the_seed_page_warnings():
    frontier = Frontier("s", SEED, 50, 1, "live")
    frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    page = Outcome({"snapshot": {}, "warnings": ["retry 1/2 for x after HTTP 503"]}, links=[])
    frontier.record(seed.index, page)
    frontier.add_sitemap_urls([], WARNINGS)
    assert frontier.manifest()["warnings"] == [
        f"[depth 0] {SEED}: retry 1/2 for x after HTTP 503",
        *WARNINGS,
    ]


def test_sitemap_state_is_rebuilt_from_kept_records():
    frontier = Frontier("s", SEED, 50, 3, "live")
    frontier.expect_sitemaps()
    (seed,) = frontier.admit()
    frontier.record(seed.index, ok(SEED))
    frontier.add_sitemap_urls(SITEMAP, WARNINGS)
    records = [
        jobstate.sitemaps_record(0, SITEMAP, WARNINGS, 50),
        jobstate.page_record(0, 0, (SEED, 0), ok(SEED), None),
    ]
    restored = Frontier("s", SEED, 50, 3, "live")
    restored.admit()
    assert jobstate.replay_sitemaps({0: restored}, records) == {0}
    jobstate.replay({0: restored}, records)
    assert restored.queue == frontier.queue
    assert restored.manifest() == frontier.manifest()
    # A larger page budget may find more sitemap URLs: the sitemaps are read again.
    larger = Frontier("s", SEED, 60, 3, "live")
    assert jobstate.replay_sitemaps({0: larger}, records) == set()


def test_a_resume_before_the_sitemaps_were_in_expects_them_again():
    records = [jobstate.page_record(0, 0, (SEED, 0), ok(SEED), None)]
    restored = Frontier("s", SEED, 50, 3, "live")
    restored.admit()
    assert jobstate.replay_sitemaps({0: restored}, records) == set()
    assert restored.expect_sitemaps() is True  # the walk starts over, before the replay
    jobstate.replay({0: restored}, records)
    # The seed's links are admitted (their positions are known); nothing after them.
    assert not restored.finished and restored.admitted == 1 + len(GRAPH[SEED])
    restored.add_sitemap_urls(SITEMAP, [])
    assert restored.expect_sitemaps() is False  # once in, never again
