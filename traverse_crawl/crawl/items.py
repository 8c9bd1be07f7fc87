"""The item of one page: exactly the manifest's page object.

``PageItem`` is a ``dict`` so feed exports write it as it is; its attributes carry
what the pipelines need and the feed must not show (the write of its snapshot).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traverse_crawl.crawl.frontier import Outcome


class PageItem(dict[str, Any]):
    seed_key: int
    index: int
    # capture: the write of the page's snapshot (``snapshots.capture.Write``, a feature
    # above the frontier), until it is durable; the snapshot pipeline settles it.
    stored: Any
    outcome: Outcome | None  # set with JOBDIR: what the journal keeps of the page

    def __init__(self, page: dict[str, Any], seed_key: int, index: int, stored: Any = None) -> None:
        super().__init__(page)
        self.seed_key = seed_key
        self.index = index
        self.stored = stored
        self.outcome = None
