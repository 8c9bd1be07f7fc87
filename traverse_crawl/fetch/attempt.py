"""What belongs to one attempt of a page request, declared once.

A page is fetched in attempts: its first request, each redirect hop, each retry
and an ``on-shell-warning`` render escalation, each a new Scrapy request whose meta
starts as a copy of the previous attempt's. Every middleware that derives a new
attempt starts it with :func:`next_attempt`, so no key of ``ATTEMPT_KEYS`` is carried
over. Imports nothing from Scrapy.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from traverse_crawl.meta_keys import (
    BACKOFF,
    BLOCKED,
    NOT_BEFORE,
    ORIGIN_DELAY,
    RENDER_DENIED,
    RENDER_FAILED,
    RENDER_FINAL,
    RENDER_HANDOFF,
    REPLAY_WORK,
    REVALIDATE_SENT,
    SNAPSHOT,
)

# Set for one attempt only (traverse_crawl.meta_keys names who sets and reads each).
# A key carried over would mislead the next attempt: a stale ``traverse_not_before``
# would put it at the head of its origin's queue without waiting TRAVERSE_MIN_DELAY.
ATTEMPT_KEYS = frozenset(
    {
        BACKOFF,
        BLOCKED,
        NOT_BEFORE,
        ORIGIN_DELAY,
        REVALIDATE_SENT,
        SNAPSHOT,
        REPLAY_WORK,
        "download_latency",  # Scrapy's downloader: this attempt's latency
        RENDER_HANDOFF,  # page guard → render: the navigation handed back to Scrapy
        RENDER_DENIED,  # page guard → render: the egress refusal of the navigation
        RENDER_FAILED,  # page guard → render: why the navigation failed
        RENDER_FINAL,  # render: this attempt's outcome is settled
    }
)
# Retry bookkeeping: a retry counts on from it; a redirect hop or a rendered
# attempt starts with its own retries.
RETRY_KEYS = frozenset({"retry_times"})
# Validators belong to one URL and one plain attempt: never carried over to a
# redirect hop (revalidation sets them again on a hop to the prior's URL) nor to a
# rendered attempt, which is never conditional (docs/snapshots.md, "Revalidation").
CONDITIONAL_HEADERS = (b"If-None-Match", b"If-Modified-Since")


def next_attempt(meta: Mapping[str, Any], *, retry: bool = False) -> dict[str, Any]:
    """The meta a new attempt starts from: ``meta`` without the last attempt's keys.

    ``retry``: the new attempt retries the same request, so it keeps the retry count.
    """
    drop = ATTEMPT_KEYS if retry else ATTEMPT_KEYS | RETRY_KEYS
    return {key: value for key, value in meta.items() if key not in drop}


def drop_validators(headers: MutableMapping[Any, Any]) -> None:
    """Remove ``CONDITIONAL_HEADERS`` from a request's headers, in place."""
    for name in CONDITIONAL_HEADERS:
        headers.pop(name, None)
