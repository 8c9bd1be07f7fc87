"""Which stored response answers a request that is not a frontier page (docs/snapshots.md,
"Which snapshot answers a request").

A request is told apart by its method, its body and the request headers that select
content: ``Accept``, ``Accept-Language`` and any header ``TRAVERSE_REQUEST_KEY_HEADERS``
names. A GET without a body whose headers are their defaults (absent, or equal to
``DEFAULT_REQUEST_HEADERS``) keeps the plain page id ``encodeURIComponent(SOURCE)::URL``;
any other request gets ``#<METHOD>-<digest>`` after it. The Nth request of one key in a
crawl (``dont_filter`` duplicates) gets ``#N`` after that, for N of 2 or more, so each
duplicate is answered in replay with its own capture, in the order the spider asked.

The digest is written here rather than taken from Scrapy's request fingerprint: that one
hashes the canonicalised URL (the page id keeps the URL as requested) and tells a header
left to its default from the same value set by hand, which select the same content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

CONTENT_HEADERS = ("accept", "accept-language")
DIGEST_HEX = 16  # 64 bits: two requests of one URL with the same digest by chance, ~n²/2⁶⁵


def key_header_names(extra: Iterable[str]) -> tuple[str, ...]:
    """The header names (lower case, once each) a request is keyed by."""
    names = list(CONTENT_HEADERS)
    for name in extra:
        lowered = name.strip().lower()
        if lowered and lowered not in names:
            names.append(lowered)
    return tuple(names)


def variant(
    method: str,
    body: bytes,
    headers: Mapping[str, bytes | None],
    defaults: Mapping[str, bytes | None],
) -> str:
    """``""`` for a plain GET with default headers, else ``#<METHOD>-<digest>``.

    ``headers``: each keyed header's value on the request (None: not set), by lower-case
    name; ``defaults``: the value it gets when not set (``DEFAULT_REQUEST_HEADERS``)."""
    method = method.upper()
    chosen = {}
    for name, value in headers.items():
        effective = defaults.get(name) if value is None else value.strip()
        if effective != defaults.get(name):
            chosen[name] = None if effective is None else effective.decode("latin-1")
    if method == "GET" and not body and not chosen:
        return ""
    text = json.dumps([method, body.hex(), sorted(chosen.items())], separators=(",", ":"))
    digest = hashlib.sha256(text.encode("ascii")).hexdigest()[:DIGEST_HEX]
    return f"#{method}-{digest}"


def occurrence_suffix(count: int) -> str:
    """``#N`` for the Nth request of one key in a crawl; nothing for the first."""
    return "" if count < 2 else f"#{count}"


class Occurrences:
    """How many requests of each key a crawl has asked for, in the order it asked.

    Held as 16-byte digests of the keys: a crawl of many distinct requests costs about
    what Scrapy's duplicate filter holds for them."""

    def __init__(self) -> None:
        self.counts: dict[bytes, int] = {}

    def next(self, key: str) -> int:
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        count = self.counts.get(digest, 0) + 1
        self.counts[digest] = count
        return count
