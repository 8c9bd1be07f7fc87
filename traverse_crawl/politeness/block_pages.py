"""Block pages: challenge and denial pages that must never be stored as the page.

``TRAVERSE_BLOCK_PATTERNS`` are regular expressions searched in the decoded body (the
HTML source, markup included) of ``html`` responses of any status
(docs/crawling-real-sites.md, "Sites that push back"). ``BlockPatterns`` compiles
them once; with none configured ``Judge.blocked`` is a constant ``None`` and costs
nothing. ``BlockRuns`` counts the ``blocked`` pages in a row of each origin, for
``TRAVERSE_BLOCK_STOP_AFTER``. Pure: no Scrapy here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# The web policy's signatures: configuration, defined with the presets.
from traverse_crawl.config.policies import CHALLENGE_PATTERNS as CHALLENGE_PATTERNS


class BlockPatterns:
    """Compiled ``TRAVERSE_BLOCK_PATTERNS``: ``blocked(text)`` names the first that matches."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self.compiled = tuple(_compile(p) for p in self.patterns)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def blocked(self, text: str) -> str | None:
        """The first pattern found in ``text``, or None."""
        for pattern, compiled in zip(self.patterns, self.compiled, strict=True):
            if compiled.search(text) is not None:
                return pattern
        return None


def _compile(pattern: str) -> Any:
    """The ``regex`` module's compile of ``pattern``, which searches a page for these
    signatures in less than half the time of ``re`` (docs/performance.md, "Modes and
    scenarios"); ``re``'s for a pattern only ``re`` reads (the setting is checked with
    ``re``). Imported here: a crawl with no patterns never loads it."""
    import regex

    try:
        return regex.compile(pattern)
    except regex.error:
        return re.compile(pattern)


def blocked_message(url: str, status: int, pattern: str) -> str:
    """The ``blocked`` error's message for an attempt that matched ``pattern``."""
    return f"HTTP {status} from {url} is a block page (it matches {pattern!r})"


def given_up_message(url: str, origin: str, run: int) -> str:
    return f"{url} not requested: {origin} gave {run} blocked pages in a row"


_GIVEN_UP = " blocked pages in a row (TRAVERSE_BLOCK_STOP_AFTER): its queued pages are "
_GIVEN_UP_END = "recorded blocked without a request"


def given_up_warning(origin: str, run: int) -> str:
    return f"{origin} gave up after {run}{_GIVEN_UP}{_GIVEN_UP_END}"


def given_up_origin(warning: str) -> str | None:
    """The origin a ``given_up_warning`` names; None for any other warning."""
    if not warning.endswith(_GIVEN_UP_END) or " gave up after " not in warning:
        return None
    return warning.split(" gave up after ", 1)[0]


class BlockRuns:
    """Each origin's ``blocked`` pages in a row; with ``stop_after`` > 0, the origins
    given up once a run reaches it (an origin given up stays so for the crawl)."""

    def __init__(self, stop_after: int) -> None:
        self.stop_after = stop_after
        self.runs: dict[str, int] = {}
        self.given_up: dict[str, int] = {}  # origin -> the run that gave it up
        self.warned: set[tuple[object, str]] = set()  # (seed, origin) already warned

    def page_blocked(self, origin: str) -> bool:
        """One more ``blocked`` page on ``origin``; True when this gives the origin up."""
        run = self.runs[origin] = self.runs.get(origin, 0) + 1
        if self.stop_after and run >= self.stop_after and origin not in self.given_up:
            self.given_up[origin] = run
            return True
        return False

    def page_answered(self, origin: str) -> None:
        """A response on ``origin`` that is not a block page ends its run."""
        if self.runs:
            self.runs.pop(origin, None)

    def warn_once(self, seed: object, origin: str) -> bool:
        """True the first time a page of ``seed`` on a given-up ``origin`` asks."""
        key = (seed, origin)
        if key in self.warned:
            return False
        self.warned.add(key)
        return True
