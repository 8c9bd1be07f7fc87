"""Politeness that every worker of a distributed crawl shares, as the middlewares see it.

A crawl with ``REDIS_URL`` puts one ``SharedPoliteness`` on its crawler before its
middlewares are built (``traverse_crawl/distributed/shared_politeness.py``); the
middlewares ask for it here, so a single-process crawl imports no distributed code
and keeps the in-process paths. Pure: a protocol and a crawler attribute.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from traverse_crawl.politeness.robots import RobotsFetch

ATTRIBUTE = "_traverse_shared_politeness"  # on the crawler, as get_config keeps its config


class SharedPoliteness(Protocol):
    def origin_slot(self, concurrency: int, delay: float, origin: str) -> Any:
        """The download slot of ``origin`` (a ``DelaySlot``) whose head waits for the crawl."""

    def hold_off(self, origin: str, seconds: float) -> None:
        """No worker sends to ``origin`` for ``seconds`` (a retry's backoff)."""

    def push_back(self, origin: str, retry_after: float | None) -> None:
        """A 429, a 503 or a block page: the origin's back-off rises for every worker."""

    def answered(self, origin: str, pace: float, success: bool) -> None:
        """Another response: the origin's pace, and a success halves its back-off."""

    def page_blocked(self, origin: str, stop_after: int) -> None:
        """A page of ``origin`` recorded blocked: the crawl's run of it grows, and gives
        the origin up for every worker at ``stop_after``."""

    def run_ended(self, origin: str) -> None:
        """A response of ``origin`` that is not a block page ends the crawl's run of it."""

    async def claim_given_up_warning(self, origin: str, seed: int) -> bool:
        """True for the first worker to ask: the seed's warning that ``origin`` was given
        up is its page's."""

    async def load_robots(
        self, origin: str, fetch: Callable[[], Awaitable[RobotsFetch]]
    ) -> tuple[RobotsFetch, bool]:
        """The crawl's copy of the origin's robots.txt, ``fetch``-ed here if no worker has
        it yet; True when this worker fetched it."""

    async def claim_robots_warning(self, origin: str) -> bool:
        """True for the first worker to ask: the origin's robots warning is its page's."""


def shared_politeness(crawler: object) -> SharedPoliteness | None:
    """The crawl's shared politeness, or None for a single-process crawl."""
    shared: SharedPoliteness | None = getattr(crawler, ATTRIBUTE, None)
    return shared


def share_politeness(crawler: object, shared: SharedPoliteness) -> None:
    """Make ``shared`` the politeness of every middleware of ``crawler`` built from now on."""
    setattr(crawler, ATTRIBUTE, shared)
