"""One seed's sitemap discovery, as a sequence of fetches (docs/architecture.md, "Sitemaps").

Pure and sans-IO: the spider asks ``next_fetch()``, fetches it through Scrapy, and
hands back what came of it (``robots_read``, ``sitemap_read``, ``sitemap_failed``);
once ``done``, ``urls`` and ``warnings`` are final. Hand-written because the order is
the design: files are read one at a time, depth first in document order, so the URLs
are a function of the files' contents alone, not of which response arrives first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from traverse_crawl.crawl import links
from traverse_crawl.fetch import urls
from traverse_crawl.sitemaps.parse import SitemapDocument, sitemaps_in_robots

MAX_NESTING = 3
# A seed reads at most this many sitemap files per page of its budget (and at least
# MIN_FILES), so an index of thousands of empty or off-origin sitemaps cannot keep a
# small crawl busy for hours.
FILES_PER_PAGE = 10
MIN_FILES = 10
Mode = Literal["robots", "auto"]


@dataclass(frozen=True)
class Fetch:
    """A file the walk wants: robots.txt (``kind="robots"``) or a sitemap."""

    url: str
    kind: Literal["robots", "sitemap"]
    level: int = 0  # 1 for the sitemaps robots.txt names (or /sitemap.xml), +1 per index
    fallback: bool = False  # auto's /sitemap.xml: a missing file is no warning


class SitemapWalk:
    """The files of one seed, in order, and the same-origin URLs they list.

    - ``robots``: the ``Sitemap:`` lines of the seed origin's robots.txt; ``auto``:
      those, else ``/sitemap.xml`` of the seed's origin (whose absence, a 404, 410
      or, in replay, no snapshot, is not worth a warning).
    - A sitemap URL read twice (an index that lists itself, two lines naming one
      file) is read once. Indexes nest at most ``MAX_NESTING`` deep.
    - Page URLs are resolved against the file's URL (WHATWG), lose their fragment,
      and are kept when on the seed's origin, first occurrence wins.
    - Reading stops, between files, once ``limit`` URLs are known: no more of them
      could be fetched under TRAVERSE_MAX_PAGES; and after ``FILES_PER_PAGE * limit``
      sitemap files (at least ``MIN_FILES``), with one warning that names the bound.
    - A problem is a warning ``sitemap URL: reason`` (``URL`` as requested).
    """

    def __init__(self, seed_origin: str, mode: Mode, limit: int) -> None:
        self.seed_origin = seed_origin
        self.mode = mode
        self.limit = limit
        self.max_files = max(MIN_FILES, FILES_PER_PAGE * limit)
        self.files = 0  # sitemap files sent
        self.urls: list[str] = []
        self.warnings: list[str] = []
        self._known: set[str] = set()
        self._read: set[str] = set()  # sitemap URLs already fetched or queued
        # Files still to read, the next one last (a stack gives document order).
        self._stack: list[Fetch] = [Fetch(seed_origin + "/robots.txt", "robots")]
        self._current: Fetch | None = None

    @property
    def done(self) -> bool:
        return self._current is None and self.next_fetch() is None

    def next_fetch(self) -> Fetch | None:
        """The file to fetch now, or None when the walk is over (or waiting)."""
        if self._current is not None or not self._stack:
            return None
        head = self._stack[-1]
        if head.kind == "sitemap" and len(self.urls) >= self.limit:
            return None  # enough URLs for the page budget: the rest is not read
        if head.kind == "sitemap" and self.files >= self.max_files:
            self._stack.clear()
            self.warnings.append(
                f"sitemap file limit ({self.max_files}) reached; further sitemap files not read"
            )
            return None
        return head

    def start(self, fetch: Fetch) -> None:
        """The spider has sent ``fetch`` (the result of ``next_fetch()``)."""
        assert self._stack and self._stack[-1] == fetch
        self._current = self._stack.pop()
        if fetch.kind == "sitemap":
            self.files += 1

    # -- results ---------------------------------------------------------------

    def robots_read(self, text: str | None) -> None:
        """robots.txt's text, or None when it could not be had (no warning:
        the robots middleware reports an unreachable robots.txt itself)."""
        current = self._finish("robots")
        found = sitemaps_in_robots(text) if text is not None else []
        roots = [Fetch(url, "sitemap", 1) for url in self._resolve_all(found, current.url)]
        if not roots and self.mode == "auto":
            fallback = self._resolve_all(["/sitemap.xml"], current.url)
            roots = [Fetch(url, "sitemap", 1, fallback=True) for url in fallback]
        self._push(roots)

    def sitemap_read(self, document: SitemapDocument, final_url: str | None = None) -> int:
        """A file was read; ``final_url`` is where it was read from after redirects.

        Returns how many new URLs on the seed's origin it added.
        """
        current = self._finish("sitemap")
        base = final_url or current.url
        for problem in document.problems:
            self._warn(current, problem)
        if document.kind == "index":
            children = self._resolve_all(list(document.locations), base)
            if current.level >= MAX_NESTING:
                if children:
                    self._warn(
                        current,
                        f"sitemap index nested more than {MAX_NESTING} deep; "
                        f"its {len(children)} sitemap(s) not read",
                    )
                return 0
            self._push([Fetch(url, "sitemap", current.level + 1) for url in children])
            return 0
        before = len(self.urls)
        for location in document.locations:
            resolved = links.resolve_on_origin(base, location, self.seed_origin)
            if resolved is not None and resolved not in self._known:
                self._known.add(resolved)
                self.urls.append(resolved)
        return len(self.urls) - before

    def sitemap_failed(self, reason: str, not_found: bool = False) -> None:
        """The file could not be fetched or decoded; ``not_found``: a 404/410 or
        no snapshot, which the ``auto`` fallback does not report."""
        current = self._finish("sitemap")
        if not (current.fallback and not_found):
            self._warn(current, reason)

    def give_up(self, reason: str) -> None:
        """The file in flight could not be processed at all (a bug): warn, go on."""
        current = self._current
        if current is None:
            return
        if current.kind == "robots":
            self.robots_read(None)
        else:
            self.sitemap_failed(reason)

    def note(self, reason: str) -> None:
        """A warning about the file in flight (a store failure, say)."""
        assert self._current is not None, "no fetch in flight"
        self._warn(self._current, reason)

    # -- helpers ---------------------------------------------------------------

    def _finish(self, kind: str) -> Fetch:
        current = self._current
        assert current is not None and current.kind == kind, "no such fetch in flight"
        self._current = None
        return current

    def _resolve_all(self, values: list[str], base: str) -> list[str]:
        """http(s) URLs, WHATWG-resolved, fragment-less, each sitemap read once."""
        out = []
        for value in values:
            resolved = urls.normalize(value, base)
            if resolved is not None and resolved not in self._read:
                self._read.add(resolved)
                out.append(resolved)
        return out

    def _push(self, fetches: list[Fetch]) -> None:
        self._stack.extend(reversed(fetches))

    def _warn(self, fetch: Fetch, reason: str) -> None:
        self.warnings.append(f"sitemap {fetch.url}: {reason}")
