"""Crawl-trap guards and the key a frontier deduplicates by (docs/crawling-real-sites.md).

Both judge a link's absolute, fragment-less URL as the link extraction serialised it
(WHATWG form). The key is only what the seen test compares: the URL requested and
recorded stays the first spelling admitted, byte for byte. Hand-written because the
rules are the design: a handful of string operations per link, no URL parse.
"""

from __future__ import annotations

from collections.abc import Iterable

from traverse_crawl.config.choices import SEEN_KEYS as SEEN_KEYS  # TRAVERSE_SEEN_KEY's names

# What ``no-tracking`` drops besides the names of TRAVERSE_IGNORE_PARAMS (and every
# name that starts with ``utm_``).
TRACKING_PARAMS = ("fbclid", "gclid", "mc_cid", "mc_eid")
MAX_PATH_SEGMENTS = 32
MAX_SEGMENT_REPEATS = 3


class SeenKey:
    """``key(url)``: the string the frontier's seen test compares for ``url``."""

    def __init__(self, kind: str = "verbatim", ignore: Iterable[str] = ()) -> None:
        self.kind = kind
        self.drop = frozenset(TRACKING_PARAMS).union(ignore) if kind == "no-tracking" else None

    @property
    def verbatim(self) -> bool:
        return self.kind == "verbatim"

    def __call__(self, url: str) -> str:
        if self.kind == "verbatim" or "?" not in url:
            return url
        head, _, query = url.partition("?")
        pairs = query.split("&")
        if self.drop is not None:
            drop = self.drop
            pairs = [
                pair
                for pair in pairs
                if not (name := pair.partition("=")[0]).startswith("utm_") and name not in drop
            ]
        # Parameters in name order; the values of one name keep their order (a stable sort).
        pairs.sort(key=lambda pair: pair.partition("=")[0])
        return head + "?" + "&".join(pairs) if pairs else head


def trap_rule(url: str, max_length: int) -> str | None:
    """The first trap rule ``url`` breaks: ``url-length``, ``path-depth`` or
    ``repeated-segment``; None when it breaks none."""
    if len(url) > max_length:
        return "url-length"
    start = url.find("/", url.find("://") + 3)
    if start < 0:
        return None
    end = len(url)
    for mark in ("?", "#"):
        cut = url.find(mark, start)
        if 0 <= cut < end:
            end = cut
    if url.count("/", start, end) <= MAX_SEGMENT_REPEATS:
        return None  # too few segments for either rule
    segments = url[start + 1 : end].split("/")
    if len(segments) > MAX_PATH_SEGMENTS:
        return "path-depth"
    if len(segments) > MAX_SEGMENT_REPEATS:
        counts: dict[str, int] = {}
        for segment in segments:
            if segment:
                counts[segment] = counts.get(segment, 0) + 1
                if counts[segment] > MAX_SEGMENT_REPEATS:
                    return "repeated-segment"
    return None
