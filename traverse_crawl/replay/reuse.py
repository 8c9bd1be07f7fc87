"""What the traverse spider takes as it is of a replayed page's own work.

Replay's reader (``replay/reader_child.py``) parses a page's links from its snapshot,
with the crawl's link bound, as it reads it; the spider uses them instead of parsing the
page again when they are the ones it would find. Pure.
"""

from __future__ import annotations

from typing import Any

from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.replay.reader_child import PageWork


def reusable_links(
    work: PageWork | None, frontier: Frontier, skipped: list[list[Any]] | None
) -> PageWork | None:
    """``work`` when its links are the page's for this seed: found on the seed's origin,
    with no crawl policy (the reader judges links by the same-origin rule only) and no
    TRAVERSE_SKIPPED lines wanted (the reader writes none); else None."""
    if (
        work is not None
        and work.links is not None
        and work.origin == frontier.seed_origin
        and skipped is None
        and frontier.policy is None
    ):
        return work
    return None
