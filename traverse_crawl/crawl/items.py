"""The item of one page: exactly the manifest's page object.

``PageItem`` is a ``dict`` so feed exports write it as it is; its attributes carry
what the pipelines need and the feed must not show (the full snapshot with body).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traverse_crawl.crawl.frontier import Outcome
    from traverse_crawl.snapshots.model import Snapshot


class PageItem(dict[str, Any]):
    seed_key: int
    index: int
    snapshot: Snapshot | None
    outcome: Outcome | None  # set with JOBDIR: what the journal keeps of the page

    def __init__(
        self, page: dict[str, Any], seed_key: int, index: int, snapshot: Snapshot | None
    ) -> None:
        super().__init__(page)
        self.seed_key = seed_key
        self.index = index
        self.snapshot = snapshot
        self.outcome = None
