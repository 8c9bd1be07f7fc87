"""One way to count an event in the crawl's stats (``component/event`` keys, docs/settings.md).

A crawler built without a stats collector (``crawler.stats`` is ``None`` until
the crawl starts) counts nothing instead of failing.
"""

from __future__ import annotations

from typing import Protocol


class Stats(Protocol):
    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


def inc(stats: Stats | None, key: str, count: int = 1) -> None:
    if stats is not None:
        stats.inc_value(key, count)


# Everything the crawl could not keep for good (a manifest, a JOBDIR or Redis commit,
# a snapshot): the crawl command's exit status 1 (docs/monitoring.md, "Exit status").
LOST = "traverse/lost"
# Set when the crawl could not start (an output it cannot write): exit status 2.
START_REFUSED = "traverse/start_refused"


def inc_lost(stats: Stats | None, key: str, count: int = 1) -> None:
    """Count ``key`` and, in ``traverse/lost``, one more thing lost."""
    inc(stats, key, count)
    inc(stats, LOST, count)
