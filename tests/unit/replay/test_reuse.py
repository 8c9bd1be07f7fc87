"""Which pages' links the spider reads, and when it takes the replay reader's as they are."""

from __future__ import annotations

import pytest

from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.replay.reader_child import PageWork
from traverse_crawl.replay.reuse import reusable_links

SEED = "https://h.test/"


def work(origin: str = "https://h.test", links: list[str] | None = None) -> PageWork:
    found = ["https://h.test/a"] if links is None else links
    return PageWork(origin, found, [], "ref", 10)


@pytest.mark.parametrize(
    ("depth", "keep_all", "skipped", "expected"),
    [
        (0, False, False, True),  # below the depth limit: followed
        (2, False, False, False),  # at it: not read
        (2, True, False, True),  # a JOBDIR keeps every page's links
        (2, False, True, True),  # TRAVERSE_SKIPPED writes them
    ],
)
def test_a_page_has_its_links_read(depth, keep_all, skipped, expected):
    frontier = Frontier("s", SEED, 10, 2, "replay", skipped=skipped)
    assert frontier.reads_links(depth, keep_all) is expected


def test_the_readers_links_are_taken_on_the_seeds_origin():
    frontier = Frontier("s", SEED, 10, 2, "replay")
    page = work()
    assert reusable_links(page, frontier, None) is page


@pytest.mark.parametrize(
    ("page", "skipped"),
    [
        (None, None),  # the page was not replayed by the reader
        (PageWork("https://h.test", None, [], "ref", 10), None),  # not an HTML page
        (work(origin="https://other.test"), None),  # found on another origin
        (work(), []),  # TRAVERSE_SKIPPED: the reader writes no skipped lines
    ],
)
def test_the_readers_links_are_not_taken(page, skipped):
    frontier = Frontier("s", SEED, 10, 2, "replay")
    assert reusable_links(page, frontier, skipped) is None
