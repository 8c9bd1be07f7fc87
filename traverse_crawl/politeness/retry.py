"""Retry policy: what is retried and how long to wait (docs/settings.md, ``RETRY_TIMES``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


def is_retryable_status(status: int) -> bool:
    """429 and every 5xx; not 408 and no other 4xx, as Traverse."""
    return status == 429 or 500 <= status <= 599


def backoff_delay(attempt: int, base: float, random: Callable[[], float]) -> float:
    """Full jitter: uniform in ``[0, base * 2**attempt)`` before retry ``attempt`` (1-based)."""
    return float(random() * base * (2**attempt))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delta-seconds or HTTP date).

    None for anything else (RFC 9110 §10.2.3), so the caller falls back to the
    normal backoff: ``str.isdigit`` alone accepts non-ASCII digits such as
    ``"²"`` that ``float`` rejects, and a header is decoded as Latin-1.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_wait(
    attempt: int,
    base: float,
    retry_after: str | None,
    retry_after_max: float,
    random: Callable[[], float],
    now: datetime | None = None,
) -> float:
    """``Retry-After`` when present and not longer than the cap, else the backoff."""
    honoured = parse_retry_after(retry_after, now)
    if honoured is not None and honoured <= retry_after_max:
        return honoured
    return backoff_delay(attempt, base, random)
