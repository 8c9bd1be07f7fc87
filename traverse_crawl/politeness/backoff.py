"""An origin's back-off and pace: the extra delay a site that pushes back gets.

(docs/crawling-real-sites.md, "Sites that push back".) Each 429 or 503 response, and
each ``blocked`` attempt, raises the origin's extra delay to twice its value (at least
``FLOOR``), up to ``TRAVERSE_MAX_DELAY``; a ``Retry-After`` within that cap sets it
instead; each later successful response halves it, and under ``FLOOR`` it is dropped.
``TRAVERSE_DELAY_FACTOR`` times the last response's download time is the origin's pace.
The effective delay is the largest of the base delay (``TRAVERSE_MIN_DELAY`` or a
Crawl-delay), the pace and the back-off, never above the cap unless the base is.
Pure: the single-process slot and the Redis ledger both use these rules.
"""

from __future__ import annotations

from dataclasses import dataclass

FLOOR = 1.0  # seconds: the least raise, and below it a halved back-off is dropped
PUSH_BACK = frozenset({429, 503})


def raised(extra: float, cap: float, retry_after: float | None = None) -> float:
    """The extra delay after a push-back: ``Retry-After`` within the cap, else doubled."""
    if retry_after is not None and retry_after <= cap:
        return max(0.0, retry_after)
    return min(cap, max(FLOOR, 2 * extra))


def halved(extra: float) -> float:
    """The extra delay after a successful response: half, and 0 once under ``FLOOR``."""
    half = extra / 2
    return half if half >= FLOOR else 0.0


def effective(base: float, pace: float, extra: float, cap: float) -> float:
    """The origin's delay: a base above the cap keeps it (a long Crawl-delay)."""
    return max(base, min(cap, max(pace, extra)))


def is_push_back(status: int) -> bool:
    return status in PUSH_BACK


def is_success(status: int) -> bool:
    """A response that halves the back-off: not a push-back and not a server error."""
    return status < 500 and status != 429


@dataclass
class OriginPace:
    """One origin's back-off (``extra``) and pace, as its slot keeps them."""

    cap: float
    factor: float
    extra: float = 0.0
    pace: float = 0.0

    def push_back(self, retry_after: float | None = None) -> float:
        self.extra = raised(self.extra, self.cap, retry_after)
        return self.extra

    def answered(self, download_time: float) -> None:
        """A successful response that took ``download_time`` seconds."""
        if self.extra:
            self.extra = halved(self.extra)
        self.paced(download_time)

    def paced(self, download_time: float) -> None:
        if self.factor:
            self.pace = self.factor * max(0.0, download_time)

    def delay(self, base: float) -> float:
        return effective(base, self.pace, self.extra, self.cap)

    @property
    def slowed(self) -> bool:
        """One request at a time while the origin is slowed down (or paced at all)."""
        return bool(self.extra or self.factor)
