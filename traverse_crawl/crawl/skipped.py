"""Why a linked URL was not crawled: a seed's skipped log (``TRAVERSE_SKIPPED``).

The frontier notes a line as it commits a page, so the lines come in the BFS commit
order of the linking pages, then in link order, whatever the concurrency. They wait in
the crawl's spool like the pages, and URLs already noted are known by their 64-bit
hashes (``crawl/queue.py``'s ``HashSet``), so memory stays flat (docs/performance.md,
"Memory at scale").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import IO, Any

from traverse_crawl.crawl.queue import HashSet
from traverse_crawl.crawl.spool import Lines, Spool
from traverse_crawl.fetch import urls

REASONS = (
    "off-origin", "not-http", "max-depth", "max-pages", "robots-denied", "link-limit",
    "out-of-scope", "excluded", "trap", "nofollow",
)  # fmt: skip


class _Memory(list[Any]):
    """The lines in memory (a frontier without a spool: the reference, the tests)."""

    def add(self, value: Any) -> None:
        self.append(value)


class SkippedLog:
    """One seed's skipped URLs: ``[url, reason, from, depth, rule?]`` in the order noted.

    ``key_hash`` is the frontier's: a URL whose seen key is admitted or noted already
    is a duplicate (``crawl/seen_key.py``)."""

    def __init__(
        self, spool: Spool | None = None, key_hash: Callable[[str], int] | None = None
    ) -> None:
        self._lines: _Memory | Lines = _Memory() if spool is None else Lines(spool)
        self.key_hash = key_hash or urls.url_hash
        self.noted = HashSet()
        self.count = 0

    def note(
        self,
        url: str,
        reason: str,
        parent: str,
        depth: int,
        admitted: HashSet,
        key: int = 0,
        rule: str | None = None,
    ) -> None:
        """A link that was not admitted, unless its URL is admitted or noted already."""
        key = key or self.key_hash(url)
        if key in admitted or key in self.noted:
            return
        self.noted.add(key)
        self.add(url, reason, parent, depth, rule)

    def add(self, url: str, reason: str, parent: str, depth: int, rule: str | None = None) -> None:
        self._lines.add(
            [url, reason, parent, depth] if rule is None else [url, reason, parent, depth, rule]
        )
        self.count += 1

    def lines(self, admitted: HashSet) -> Iterator[dict[str, Any]]:
        """The lines to write. A link cut by the per-page bound may have been admitted
        from a later page: only the end of the crawl knows, so it is dropped here."""
        for url, reason, parent, depth, *rule in self._lines:
            if reason == "link-limit" and self.key_hash(url) in admitted:
                continue
            if rule:
                yield {
                    "url": url,
                    "reason": reason,
                    "rule": rule[0],
                    "from": parent,
                    "depth": depth,
                }
            else:
                yield {"url": url, "reason": reason, "from": parent, "depth": depth}

    def write(self, out: IO[bytes], admitted: HashSet) -> None:
        for line in self.lines(admitted):
            try:
                data = json.dumps(line, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate in an href: escaped
                data = json.dumps(line).encode("ascii")
            out.write(data + b"\n")


def note_page(
    log: SkippedLog,
    admitted: HashSet,
    page_url: str,
    depth: int,
    links: list[str],
    others: list[list[Any]],
    follow: bool,
    discover: Any,
) -> None:
    """A committed page's links in document order: the followed ones to ``discover``
    (which notes ``max-pages``), the rest noted here. ``others`` are the page's
    ``[url, reason, position]``: position = how many followed links come before it.
    A page at the depth limit follows none: its same-origin links are ``max-depth``.
    """
    at, count = 0, len(others)
    for position, link in enumerate(links):
        while at < count and others[at][2] <= position:
            _note_other(log, admitted, page_url, depth, others[at], follow)
            at += 1
        if follow:
            discover(link, depth + 1, page_url)
        else:
            log.note(link, "max-depth", page_url, depth + 1, admitted)
    while at < count:
        _note_other(log, admitted, page_url, depth, others[at], follow)
        at += 1


def _note_other(
    log: SkippedLog, admitted: HashSet, page_url: str, depth: int, other: list[Any], follow: bool
) -> None:
    url, reason = other[0], other[1]
    if reason == "link-limit" and not follow:
        reason = "max-depth"
    log.note(url, reason, page_url, depth + 1, admitted, rule=other[3] if len(other) > 3 else None)
