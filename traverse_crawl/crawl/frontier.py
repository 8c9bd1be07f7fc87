"""The BFS frontier of one seed: queue, seen set, admission under the budget, and the manifest.

Pages are fetched in parallel and their outcomes arrive in any order, but they are
committed in admission order, so the queue grows exactly as in Traverse's
sequential loop and the manifest is the same whatever the concurrency
(docs/architecture.md, "From seed to manifest"). Hand-written because the
admission rules are the design.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from traverse_crawl.crawl.links import Judge
from traverse_crawl.crawl.queue import HashSet, UrlQueue
from traverse_crawl.crawl.scope import Policy, policy_for
from traverse_crawl.crawl.skipped import SkippedLog, note_page
from traverse_crawl.crawl.spool import PageList, PageLog, Spool, dump_manifest, manifest_warnings
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls

# Memory stays flat in the pages: the seen set and the URLs past the admissible
# queue are 64-bit hashes (``urls.url_hash``); with a ``Spool`` committed pages go to
# it, the queue keeps only its admitted window in memory (``crawl/queue.py``), and at
# most ADMIT_WINDOW URLs are admitted and not committed.
ADMIT_WINDOW = 4096  # with a spool: admitted, uncommitted pages (a head page's wait)


@dataclass(frozen=True)
class Admission:
    """A URL the frontier wants fetched: its position, URL, depth and page id."""

    index: int
    url: str
    depth: int
    page_id: str


@dataclass
class Outcome:
    """What happened to one admitted URL, as the spider observed it."""

    fetch: dict[str, Any]  # {"snapshot": manifest view} | {"error": ...}, + warnings, ...
    links: list[str] = field(default_factory=list)  # same-origin, fragment-less
    offhost_final_url: str | None = None  # set when an HTML page resolved off-origin
    source_ref: str | None = None
    body_size: int | None = None  # the snapshot body's bytes (the page's ``bodySize``)
    # TRAVERSE_SKIPPED: the page's other links, [url, reason, position, rule?] (crawl/links.py)
    skipped: list[list[Any]] | None = None


def seed_frontier(
    seed: Any, config: Any, spool: Spool | None = None, skipped: bool = False
) -> Frontier:
    """A seed's frontier under the crawl's settings and the seed's own values."""
    return Frontier(
        seed.id, seed.url,
        config.max_pages if seed.max_pages is None else seed.max_pages,
        config.max_depth if seed.max_depth is None else seed.max_depth,
        config.mode, spool=spool, skipped=skipped, policy=policy_for(seed, config),
    )  # fmt: skip


class Frontier:
    """One seed's queue, seen set and committed pages."""

    def __init__(
        self,
        seed_id: str,
        seed_url: str,
        max_pages: int,
        max_depth: int,
        mode: str,
        spool: Spool | None = None,
        skipped: bool = False,
        policy: Policy | None = None,
    ) -> None:
        self.seed_id = seed_id
        self.seed_url = seed_url  # verbatim input: the manifest's ``seed.url``
        self.max_pages = max_pages
        self.max_depth = max_depth
        self.mode = mode
        normalized = urls.normalize(seed_url)
        self.seed_origin = urls.origin(seed_url) if normalized else ""
        # An unparsable or non-http(s) seed stays raw; it becomes the invalid-url page.
        self.seed_frontier_url = normalized if normalized is not None else seed_url
        # Entries keep the URL of the page whose links first queued them: the BFS
        # tree that ``scrapy report`` draws (the optional ``discoveredFrom``, docs/reports.md).
        self.queue = UrlQueue(spool)
        self.queue.append(self.seed_frontier_url, 0)
        # Scope, include/exclude, extra hops, trap guards and the seen key (crawl/scope.py);
        # None: today's same-origin rules, on their fast path.
        self.policy = policy
        self.key_hash = urls.url_hash
        if policy is not None and not policy.key.verbatim:
            key = policy.key
            self.key_hash = lambda url: urls.url_hash(key(url))
        # The hop count of the page that queued an entry, where above 0 (extra hops).
        self.parent_hops: dict[int, int] = {}
        self.seen = HashSet((self.key_hash(self.seed_frontier_url),))
        self.window = None if spool is None else ADMIT_WINDOW
        self.discovered_from: dict[str, str] = {}  # parents set from outside (Redis worker)
        self.overflow = HashSet()  # hashes of distinct URLs past the admissible queue
        self.admitted = 0
        self.pending: dict[int, Outcome] = {}
        self.pages: PageLog = PageList() if spool is None else spool.pages()
        self.errors = 0  # committed pages whose fetch is an error (progress figures)
        self.outcomes: dict[str, int] = {}  # committed pages by "ok" or error kind (stats file)
        self.store_warnings: dict[int, str] = {}
        self.stop_reason: str | None = None
        # Sitemaps: None = not read for this seed; else the result, once in.
        self.sitemaps_expected = False
        self.sitemap_urls: list[str] | None = None
        self.sitemap_warnings: list[str] = []
        self._id_prefix = urls.page_id(seed_id, "")  # encodeURIComponent(seed id) + "::"
        # TRAVERSE_SKIPPED: the links not admitted, noted as pages commit (crawl/skipped.py).
        self.skipped = SkippedLog(spool, self.key_hash) if skipped else None

    # -- admission -----------------------------------------------------------

    @property
    def seed_is_valid(self) -> bool:
        return self.seed_origin != ""

    def admit(self) -> list[Admission]:
        """Hand out every queued URL that the page budget (and the window) allows."""
        out = []
        limit = min(self.max_pages, len(self.queue))
        if self.window is not None:
            limit = min(limit, len(self.pages) + self.window)
        while self.admitted < limit:
            url, depth = self.queue[self.admitted]
            out.append(Admission(self.admitted, url, depth, self._id_prefix + url))
            self.admitted += 1
        return out

    def expect_sitemaps(self) -> bool:
        """Hold the BFS after the seed until ``add_sitemap_urls``; False (and no
        hold) when no sitemap URL could enter: depth 0, no budget, invalid seed.
        True again for a restored frontier still waiting (the walk starts over).

        Sitemap URLs enter right after the seed's links, so no commit after the
        seed's happens before they are in; the seed's links, whose positions are
        known, are admitted at once. Whichever comes back first, the queue is the same.
        """
        if self.sitemaps_expected:
            return self.sitemap_urls is None
        if self.max_depth < 1 or self.max_pages < 1 or not self.seed_is_valid or len(self.pages):
            return False
        self.sitemaps_expected = True
        return True

    def add_sitemap_urls(
        self, sitemap_urls: list[str], warnings: list[str]
    ) -> tuple[list[dict[str, Any]], list[Admission]]:
        """The sitemaps' same-origin URLs (in order) and their crawl-level warnings.

        Returns the page objects this lets commit and the new admissions.
        """
        if not self.sitemaps_expected or self.sitemap_urls is not None:
            return [], []
        self.sitemap_urls = list(sitemap_urls)
        self.sitemap_warnings = list(warnings)
        if len(self.pages):  # the seed is in: its links are queued, the sitemap URLs follow
            self._queue_sitemap_urls()
        committed = self._commit()
        return committed, self.admit()

    def _holding(self) -> bool:  # commits after the seed's wait for the sitemaps
        return self.sitemaps_expected and self.sitemap_urls is None

    def _queue_sitemap_urls(self) -> None:
        policy = self.policy
        for url in self.sitemap_urls or ():
            if policy is None or policy.judge(url, 0) is None:
                self._discover(url, 1)

    def may_follow(self, depth: int) -> bool:
        """Links are read only from pages below the depth limit, as in Traverse."""
        return depth < self.max_depth

    def reads_links(self, depth: int, keep_all: bool) -> bool:
        """Whether a page at ``depth`` has its links read: followed, written to
        TRAVERSE_SKIPPED, or all kept (``keep_all``: a JOBDIR, for a resume with a
        larger depth)."""
        return self.may_follow(depth) or keep_all or self.skipped is not None

    def hop(self, index: int, final_url: str | None) -> int:
        """The hop count of an admitted page: 0 when its final URL is in scope (given as
        None), else one more than the page that linked to it (crawl/scope.py)."""
        return 0 if final_url is None else self.parent_hops.get(index, 0) + 1

    def off_scope(self, final_url: str) -> str | None:
        """A page's final URL when it is out of the seed's scope (the page is recorded
        with it; its links are followed only as extra hops allow), else None."""
        if self.policy is None:
            in_scope = urls.same_origin(final_url, self.seed_origin)
        else:
            in_scope = self.policy.in_scope(final_url)
        return None if in_scope else final_url

    def link_judge(self, hop: int) -> Judge | None:
        """What the link extraction asks of each link of a page with hop count ``hop``;
        None: today's same-origin rule."""
        policy = self.policy
        if policy is None:
            return None
        return lambda url: policy.judge(url, hop)

    def follows_hop(self, hop: int) -> bool:
        return hop == 0 or (self.policy is not None and self.policy.follows(hop))

    def admission(self, index: int) -> Admission:
        """The admission of an admitted URL (its request may be sent later)."""
        url, depth = self.queue[index]
        return Admission(index, url, depth, self._id_prefix + url)

    def page_object(self, index: int, outcome: Outcome) -> dict[str, Any]:
        """The manifest's page object for an admitted URL (the feed's item too)."""
        url, depth = self.queue[index]
        page: dict[str, Any] = {"id": self._id_prefix + url, "url": url, "depth": depth}
        parent = self.queue.entry(index)[2] or self.discovered_from.get(url)
        if parent is not None:
            page["discoveredFrom"] = parent
        page["fetch"] = outcome.fetch
        if outcome.source_ref is not None:
            page["sourceRef"] = outcome.source_ref
        if outcome.body_size is not None:
            page["bodySize"] = outcome.body_size
        return page

    def record(self, index: int, outcome: Outcome) -> tuple[list[dict[str, Any]], list[Admission]]:
        """Store an outcome; commit what is now in order; admit what that discovered.

        Returns the newly committed page objects (in BFS order) and the new admissions.
        ``JOBDIR`` keeps the outcomes, not this object: replaying them through here
        rebuilds the same state whatever order they were kept in (``jobdir/state.py``).
        Links beyond the depth limit may be handed in (a crawl with a JOBDIR keeps
        them, for a later, deeper resume); they enter the queue only from pages
        below ``max_depth``.
        """
        if index < len(self.pages) or index >= self.admitted or index in self.pending:
            return [], []  # a duplicate or stray outcome never changes the manifest
        self.pending[index] = outcome
        committed = self._commit()
        return committed, self.admit() if committed else []

    def _commit(self) -> list[dict[str, Any]]:
        """Commit every outcome that is next in admission order, extending the queue."""
        committed = []
        while len(self.pages) in self.pending and not (len(self.pages) and self._holding()):
            position = len(self.pages)
            done = self.pending.pop(position)
            url, depth = self.queue[position]
            page = self.page_object(position, done)
            prefix = f"[depth {depth}] {url}: "
            notes = [prefix + w for w in done.fetch.get("warnings", ())]
            follow = self.may_follow(depth)
            hop = self.hop(position, done.offhost_final_url)
            if follow and not self.follows_hop(hop):
                notes.append(
                    f"[depth {depth}] {url}: fetched page resolved off-host "
                    f"({done.offhost_final_url}); its links were not followed"
                )
            if self.skipped is None:
                for link in done.links if follow else ():
                    self._discover(link, depth + 1, url, hop)
            else:
                self._note_skipped(done, url, depth, follow, page.get("discoveredFrom"), hop)
            if position == 0 and self.sitemap_urls is not None:
                self._queue_sitemap_urls()
            self.pages.commit(page, notes)
            error = done.fetch.get("error")
            self.errors += error is not None
            kind = "ok" if error is None else error["kind"]
            self.outcomes[kind] = self.outcomes.get(kind, 0) + 1
            committed.append(page)
        self.queue.forget(len(self.pages))
        return committed

    def _discover(self, link: str, depth: int, parent: str | None = None, hop: int = 0) -> None:
        key = self.key_hash(link)
        if key in self.seen:
            return
        if len(self.queue) < self.max_pages:
            self.seen.add(key)
            if hop:
                self.parent_hops[len(self.queue)] = hop
            self.queue.append(link, depth, parent)
        else:  # never admissible: only counted (``remaining``)
            self.overflow.add(key)
            if self.skipped is not None and parent is not None:
                self.skipped.note(link, "max-pages", parent, depth, self.seen, key)

    def _discover_hop(self, hop: int, link: str, depth: int, parent: str | None = None) -> None:
        self._discover(link, depth, parent, hop)

    def _note_skipped(
        self, done: Outcome, url: str, depth: int, follow: bool, parent: str | None, hop: int = 0
    ) -> None:
        assert self.skipped is not None
        error = done.fetch.get("error")
        if error is not None and error.get("kind") == "robots-denied" and parent is not None:
            self.skipped.add(url, "robots-denied", parent, depth)  # admitted, never requested
        discover: Callable[..., None] = self._discover
        if hop:
            discover = functools.partial(self._discover_hop, hop)

        note_page(
            self.skipped, self.seen, url, depth, done.links, done.skipped or [], follow, discover,
        )  # fmt: skip

    def outstanding(self) -> list[Admission]:
        """Admitted URLs with no outcome yet: the requests to send after a resume."""
        return [
            self.admission(index)
            for index in range(len(self.pages), self.admitted)
            if index not in self.pending
        ]

    # -- completion ----------------------------------------------------------

    @property
    def finished(self) -> bool:
        """Every admitted page is committed and nothing more can be admitted."""
        return (
            len(self.pages) == self.admitted
            and not self._holding()
            and (self.admitted >= self.max_pages or self.admitted >= len(self.queue))
        )

    @property
    def remaining(self) -> int:
        """URLs discovered but not fetched (the queue left when the loop stops)."""
        return len(self.queue) + len(self.overflow) - len(self.pages)

    def note_store_failure(self, index: int, message: str) -> None:
        """A failed store write is a page-scoped warning; the page and its snapshot stand."""
        try:
            url, depth = self.queue[index]
            where = f"[depth {depth}] {url}"
        except IndexError:  # committed more than urlqueue.KEEP pages ago
            where = f"[page {index}]"
        self.store_warnings[index] = (
            f"{where}: store.put failed ({message}); page fetch result kept, snapshot not persisted"
        )

    def fail_seed(self, error: FetchError) -> dict[str, Any]:
        """The whole seed fails before any fetch: one page, the raw seed URL, as in Traverse."""
        self.queue = UrlQueue()
        self.queue.append(self.seed_url, 0)
        self.seen = HashSet((self.key_hash(self.seed_url),))
        self.admitted = 1
        committed, _ = self.record(0, Outcome({"error": error.to_dict()}))
        return committed[0]

    def stop(self, reason: str) -> None:
        """The crawl ended before this seed finished (shutdown, CLOSESPIDER_*, ...)."""
        if not self.finished and self.stop_reason is None:
            self.stop_reason = reason

    def _head(self) -> dict[str, Any]:
        return {"seed": {"id": self.seed_id, "url": self.seed_url}, "mode": self.mode}

    def manifest(self) -> dict[str, Any]:
        """Traverse's ``CrawlManifest``, camelCase; warnings in BFS page order."""
        pages = list(self.pages)
        warnings = list(manifest_warnings(self))
        return {
            **self._head(),
            "pages": pages,
            "warnings": warnings,
            "truncated": self.remaining > 0,
        }

    def write_manifest(self, out: IO[str]) -> None:
        """``json.dump(self.manifest(), out, indent=2, ensure_ascii=False)``, streamed:
        the pages go from the page log to ``out`` one at a time."""
        dump_manifest(out, self._head(), self.pages, manifest_warnings(self), self.remaining > 0)
