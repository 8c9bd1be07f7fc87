"""The figures of a seed's progress line (``crawl/progress.py``)."""

from __future__ import annotations

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.progress import SeedProgress, log_line


def test_figures_count_errors_once_and_queued_within_the_budget():
    frontier = Frontier("s", "https://h.test/", 3, 1, "live")
    seed = SeedProgress(frontier)
    frontier.admit()
    links = [f"https://h.test/{i}" for i in range(5)]
    frontier.record(0, Outcome({"snapshot": {}}, links=links))
    frontier.record(1, Outcome({"error": {"kind": "network", "message": "x"}}))
    figures = seed.figures()
    assert (figures.recorded, figures.queued, figures.errors) == (2, 1, 1)
    assert seed.figures().errors == 1  # counted once
    assert log_line(figures, 12.4) == "seed s: 2/3 pages, 1 queued, 1 errors, 12 pages/min"


def test_a_seed_whose_origin_pushes_back_says_how_slow_it_goes():
    seed = SeedProgress(Frontier("s", "https://h.test/", 3, 1, "live"))
    line = "seed s: 0/3 pages, 1 queued, 0 errors, 0 pages/min"  # the seed page, queued
    assert log_line(seed.figures(4.0), 0) == f"{line}, slowed down: 4.0 s between requests"
    assert log_line(seed.figures(0.02), 0) == line  # a pace too short to mention
