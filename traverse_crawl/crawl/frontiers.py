"""The spider's seeds, each in its frontier: the requests out, the outcomes recorded,
the end of each seed announced.

One process keeps a seed's whole BFS here; a worker of a distributed crawl keeps a
local view of each seed it joins (``distributed/worker.py``), whose outcomes Redis
records. Either way a page's request is built, and its outcome turned into its
item, by the same code, so a page's manifest entry is the same in both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from scrapy.crawler import Crawler

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Admission, Frontier, Outcome, seed_frontier
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.request import WhatwgRequest
from traverse_crawl.meta_keys import HINT, INDEX, PAGE_ID, SEED, WARNINGS
from traverse_crawl.signals import seed_finished, seed_started
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

# A crawl's memory does not grow with its pages: committed pages go to the crawl's
# spool (``crawl/spool.py``), and at most REQUEST_WINDOW requests a seed are out,
# the others wait in its frontier.
REQUEST_WINDOW = 256  # requests out per seed: far above the downloader's 16; 2 KB each


class Frontiers:
    """Every seed's frontier, by seed key, and what is out of each."""

    @staticmethod
    def of(spider: Any) -> Frontiers | None:
        """The spider's frontiers: the ``traverse`` spider's (or a subclass's); any
        other spider has none (no seeds, no manifests)."""
        found = getattr(spider, "frontiers", None)
        return found if isinstance(found, Frontiers) else None

    def __init__(
        self,
        crawler: Crawler,
        config: TraverseConfig,
        seeds: list[Seed],
        spool: Spool,
        callback: Callable[..., Any],
        errback: Callable[..., Any],
        *,
        journal: bool,
        distributed: bool,
    ) -> None:
        self.crawler, self.config, self.seeds, self.spool = crawler, config, seeds, spool
        self.callback, self.errback = callback, errback
        # ``journal``: a JOBDIR keeps every page's outcome, links included (for a resume
        # with a larger depth). ``distributed``: the worker records each outcome in
        # Redis, not this process.
        self.journal, self.distributed = journal, distributed
        self.by_key: dict[int, Frontier] = {}
        self._next: dict[int, int] = {}  # seed key -> first admitted index not requested
        self._out: dict[int, set[int]] = {}  # seed key -> indices requested, no outcome yet
        self._announced: set[int] = set()

    def open(self, key: int) -> Frontier:
        """Seed ``key``'s frontier for this process's crawl of it, its pages spooled."""
        c = self.config
        frontier = seed_frontier(self.seeds[key], c, spool=self.spool, skipped=c.skipped)
        self.by_key[key] = frontier
        self.crawler.signals.send_catch_log(seed_started, frontier=frontier, seed_key=key)
        return frontier

    def fail_seed(self, key: int, error: FetchError) -> PageItem:
        """The seed's one page, failed with ``error``: the seed is finished now."""
        item = PageItem(self.by_key[key].fail_seed(error), key, 0, None)
        self.check_finished(key)
        return item

    # -- requests ------------------------------------------------------------

    def next_requests(self, key: int) -> list[WhatwgRequest]:
        """The seed's admitted pages not yet requested, up to REQUEST_WINDOW out."""
        frontier, out = self.by_key[key], self._out.setdefault(key, set())
        index, batch = self._next.get(key, len(frontier.pages)), []
        while len(out) < REQUEST_WINDOW and index < frontier.admitted:
            if index >= len(frontier.pages) and index not in frontier.pending:  # not resumed
                out.add(index)
                batch.append(self.page_request(key, frontier.admission(index)))
            index += 1
        self._next[key] = index  # before any is yielded: another outcome may come first
        return batch

    def page_request(self, key: int, adm: Admission) -> WhatwgRequest:
        """The request (its meta keys: docs/settings.md) for an admitted page of the seed."""
        meta: dict[str, Any] = {
            SEED: key,
            INDEX: adm.index,
            PAGE_ID: adm.page_id,
            WARNINGS: [],
            "handle_httpstatus_all": True,
            # Every admitted URL is on the seed's origin (links are filtered).
            "download_slot": self.by_key[key].seed_origin,
            "depth": adm.depth,
        }
        if adm.index == 0 and (hint := self.seeds[key].content_type):
            meta[HINT] = hint
        # The URL is requested exactly as the frontier holds it (fetch/request.py).
        return WhatwgRequest(
            adm.url,
            callback=self.callback,
            errback=self.errback,
            dont_filter=True,
            meta=meta,
            priority=-adm.depth,
        )

    def reads_links(self, meta: dict[str, Any]) -> bool:
        """Whether the page this request meta is for has its links read: the replay
        reader parses a page only then (``replay/middleware.py``)."""
        key, depth = meta.get(SEED), meta.get("depth")
        frontier = self.by_key.get(key) if key is not None else None
        if frontier is None or not isinstance(depth, int):
            return True
        return frontier.reads_links(depth, self.journal)

    # -- outcomes ------------------------------------------------------------

    def finish_page(
        self, key: int, index: int, outcome: Outcome, stored: Any = None
    ) -> Iterator[Any]:
        """Record a page's outcome: its item, then the requests it lets out."""
        frontier = self.by_key[key]
        inc(self.crawler.stats, "frontier/pages")
        if "error" in outcome.fetch:
            inc(self.crawler.stats, f"frontier/error/{outcome.fetch['error']['kind']}")
        # The item first: it waits in the pipelines until its snapshot (handed to the
        # writer as the response reached the spider) is durable; with
        # CONCURRENT_ITEMS=2 the requests go on meanwhile.
        item = PageItem(frontier.page_object(index, outcome), key, index, stored)
        # For the JOBDIR journal, or for Redis, which records it (``distributed/worker.py``).
        item.outcome = outcome if self.journal or self.distributed else None
        yield item
        if self.distributed:
            return
        frontier.record(index, outcome)
        self._out.get(key, set()).discard(index)
        yield from self.next_requests(key)
        self.check_finished(key)

    def check_finished(self, key: int) -> None:
        """Announce the seed's end once (``seed_finished``), with the cap's warning."""
        frontier = self.by_key[key]
        if frontier.finished and key not in self._announced:
            self._announced.add(key)
            if frontier.remaining:
                inc(self.crawler.stats, "frontier/truncated")
                logger.warning(
                    "seed %r: maxPages cap (%d) reached; %d further URL(s) not fetched",
                    frontier.seed_id,
                    frontier.max_pages,
                    frontier.remaining,
                )
            self.crawler.signals.send_catch_log(seed_finished, frontier=frontier, seed_key=key)

    # -- the worker of a distributed crawl (distributed/worker.py) ------------

    def frontier(self, key: int) -> Frontier:
        """Seed ``key``'s frontier, made on the first call when the worker joins the seed:
        its pages are Redis's (no spool)."""
        frontier = self.by_key.get(key)
        if frontier is None:
            # ``skipped``: the pages' other links go to Redis with their records.
            frontier = seed_frontier(self.seeds[key], self.config, skipped=self.config.skipped)
            self.by_key[key] = frontier
        return frontier
