"""Per-seed progress figures and their log line (``TRAVERSE_PROGRESS``, docs/settings.md).

``SeedProgress`` follows one seed's frontier: pages recorded of its budget, URLs
still to record within the budget, errors among the recorded pages (the
frontier counts them as it commits), and the rate of recording.
"""

from __future__ import annotations

from dataclasses import dataclass

from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.utils.redact import redact_text


@dataclass(frozen=True)
class Figures:
    seed_id: str  # as shown: a URL's password masked
    recorded: int
    budget: int
    queued: int
    errors: int
    finished: bool


class SeedProgress:
    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier

    def figures(self) -> Figures:
        frontier = self.frontier
        recorded = len(frontier.pages)
        within_budget = min(len(frontier.queue), frontier.max_pages)
        return Figures(
            seed_id=redact_text(frontier.seed_id),
            recorded=recorded,
            budget=frontier.max_pages,
            queued=max(0, within_budget - recorded),
            errors=frontier.errors,
            finished=frontier.finished,
        )


def per_minute(count: int, seconds: float) -> float:
    return count * 60.0 / seconds if seconds > 0 else 0.0


def log_line(figures: Figures, rate: float) -> str:
    """``seed ID: N/BUDGET pages, Q queued, E errors, R pages/min``."""
    return (
        f"seed {figures.seed_id}: {figures.recorded}/{figures.budget} pages, "
        f"{figures.queued} queued, {figures.errors} errors, {rate:.0f} pages/min"
    )
