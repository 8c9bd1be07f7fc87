"""Per-seed progress figures and their log line (CONTRACT §6, ``TRAVERSE_PROGRESS``).

``SeedProgress`` follows one seed's frontier: pages recorded of its budget, URLs
still to record within the budget, errors among the recorded pages (counted
incrementally, so a look costs only the pages recorded since the last one),
and the rate of recording.
"""

from __future__ import annotations

from dataclasses import dataclass

from traverse_crawl.core.frontier import Frontier


@dataclass(frozen=True)
class Figures:
    seed_id: str
    recorded: int
    budget: int
    queued: int
    errors: int
    finished: bool


class SeedProgress:
    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier
        self._scanned = 0
        self._errors = 0

    def figures(self) -> Figures:
        frontier = self.frontier
        pages = frontier.pages
        for page in pages[self._scanned :]:
            if "error" in page["fetch"]:
                self._errors += 1
        self._scanned = len(pages)
        within_budget = min(len(frontier.queue), frontier.max_pages)
        return Figures(
            seed_id=frontier.seed_id,
            recorded=len(pages),
            budget=frontier.max_pages,
            queued=max(0, within_budget - len(pages)),
            errors=self._errors,
            finished=frontier.finished,
        )


def per_minute(count: int, seconds: float) -> float:
    return count * 60.0 / seconds if seconds > 0 else 0.0


def log_line(figures: Figures, rate: float) -> str:
    """``seed ID: N/BUDGET pages, Q queued, E errors, R pages/min`` (CONTRACT §6)."""
    return (
        f"seed {figures.seed_id}: {figures.recorded}/{figures.budget} pages, "
        f"{figures.queued} queued, {figures.errors} errors, {rate:.0f} pages/min"
    )
