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
    slowed: float = 0.0  # seconds: the seed origin's back-off or pace, when it pushes back


class SeedProgress:
    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier

    def figures(self, slowed: float = 0.0) -> Figures:
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
            slowed=slowed,
        )


def per_minute(count: int, seconds: float) -> float:
    return count * 60.0 / seconds if seconds > 0 else 0.0


def log_line(figures: Figures, rate: float) -> str:
    """``seed ID: N/BUDGET pages, Q queued, E errors, R pages/min``, then
    ``, slowed down: S s between requests`` while its origin pushes back."""
    line = (
        f"seed {figures.seed_id}: {figures.recorded}/{figures.budget} pages, "
        f"{figures.queued} queued, {figures.errors} errors, {rate:.0f} pages/min"
    )
    slowed = slowed_text(figures.slowed)
    return f"{line}, {slowed}" if slowed else line


def slowed_text(seconds: float) -> str:
    """What the progress says of an origin's back-off or pace; nothing under 0.1 s."""
    return f"slowed down: {seconds:.1f} s between requests" if seconds >= 0.1 else ""
