"""A BFS page's outcome, from its response or its failure: each feature's part of it.

The snapshot and meta robots verdict are capture's (``snapshots/capture_middleware.py``),
the links the frontier's (``crawl/links.py``, a large page off the event loop) or, in
replay, the reader's (``replay/reuse.py``), the values extraction's
(``extraction/spider_extraction.py``), the ``fetch`` object the manifest's
(``manifests/outcomes.py``). This module only puts them together, in the order the
manifest needs: links before noarchive, extraction before the page is recorded.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.crawler import Crawler
from scrapy.http import Response
from twisted.python.failure import Failure

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.links import Judge, find_links_in_turn
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.exceptions import fetch_error_from_failure
from traverse_crawl.manifests.outcomes import fetch_record
from traverse_crawl.meta_keys import PAGE_ID, REPLAY_WORK, SNAPSHOT, SOURCE_REF, WARNINGS
from traverse_crawl.politeness.robots_meta import nofollow_lines
from traverse_crawl.replay.reader_child import PageWork
from traverse_crawl.replay.reuse import reusable_links
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.capture_middleware import page_verdict, snapshot_of, source_ref_of
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class PageOutcomes:
    """The outcome of each page the spider's frontiers requested."""

    def __init__(
        self, crawler: Crawler, config: TraverseConfig, extraction: Any, journal: bool
    ) -> None:
        self.crawler, self.config = crawler, config
        # With TRAVERSE_EXTRACT, ``extraction.spider_extraction.SpiderExtraction``, else None.
        self.extraction = extraction
        # With a JOBDIR every page's links are kept, for a resume with a larger depth
        # (a link-bound warning only where the links are followed).
        self.journal = journal

    async def of_response(
        self, frontier: Frontier, index: int, response: Response, extracted: list[Any]
    ) -> tuple[Outcome, Snapshot | None]:
        """The page's outcome, and its snapshot when it has one; its extracted items go
        to ``extracted``. A bug here fails the page, never leaves it unrecorded."""
        try:
            return await self._outcome(frontier, index, response, extracted)
        except Exception as exc:
            logger.exception(
                "unexpected error while processing %s",
                response.url,
                extra={"seed": frontier.seed_id, "url": response.url},
            )
            inc(self.crawler.stats, "frontier/unexpected_error")
            message = f"unexpected error while processing the response from {response.url}: {exc}"
            return Outcome(fetch_record(response.meta, FetchError("network", message))), None

    def of_failure(self, failure: Failure, frontier: Frontier) -> Outcome:
        """The outcome of a page whose request failed: its typed error."""
        request = failure.request  # type: ignore[attr-defined]
        error = fetch_error_from_failure(
            failure, request, self.config.download_timeout, self.config.download_maxsize
        )
        logger.debug(
            "page failed: %s (%s)",
            request.url,
            error.kind,
            extra={"seed": frontier.seed_id, "url": request.url},
        )
        return Outcome(fetch_record(request.meta, error))

    async def _outcome(
        self, frontier: Frontier, index: int, response: Response, extracted: list[Any]
    ) -> tuple[Outcome, Snapshot | None]:
        meta = response.meta
        snapshot: Snapshot | FetchError = meta.get(SNAPSHOT) or snapshot_of(response)
        if isinstance(snapshot, FetchError):
            return Outcome(fetch_record(meta, snapshot)), None
        links: list[str] = []
        offhost: str | None = None
        page_url, depth = frontier.queue[index]
        follow = frontier.may_follow(depth)
        # Replay's reader has done the page's own work from this snapshot already.
        work: PageWork | None = meta.get(REPLAY_WORK)
        # TRAVERSE_SKIPPED: the page's other links too, and those of pages at the depth limit.
        skipped: list[list[Any]] | None = None if frontier.skipped is None else []
        # TRAVERSE_ROBOTS_META=obey: the capture's verdict (politeness/robots_meta.py).
        verdict = page_verdict(response, snapshot, self.config)
        nofollow = verdict is not None and verdict.nofollow is not None
        if snapshot["contentType"] == "html" and frontier.reads_links(depth, self.journal):
            # Out of the seed's scope: the page's links are followed only as extra hops allow.
            offhost = frontier.off_scope(snapshot["url"])
            hop = frontier.hop(index, offhost)
            if not frontier.follows_hop(hop):
                pass
            elif nofollow:  # none followed; each a skipped line, with nofollow's reason
                if skipped is not None:
                    found = await self._links(snapshot, frontier.seed_origin, {}, skipped)
                    skipped = nofollow_lines(found, skipped)
            elif (reused := reusable_links(work, frontier, skipped)) is not None:
                links = self._found(reused.links or [], reused.warnings, meta if follow else {})
            else:
                links = await self._links(
                    snapshot, frontier.seed_origin, meta if follow else {}, skipped,
                    frontier.link_judge(hop),
                )  # fmt: skip
        if verdict is not None and verdict.noarchive is not None:
            # Not captured (no snapshot stored, no sourceRef, no items); its links as any page's.
            error = verdict.noarchive_error(response.url, response.status)
            outcome = Outcome(
                fetch_record(meta, error), links=links, offhost_final_url=offhost,
                skipped=skipped or None,
            )  # fmt: skip
            return outcome, None
        # The capture middleware has built the snapshot and its sourceRef; without it
        # (a project that removed it) they are built here.
        source_ref = meta.get(SOURCE_REF)
        if source_ref is None:
            source_ref = source_ref_of(snapshot, meta)
        if self.extraction is not None and snapshot["contentType"] == "html":
            # From the snapshot as stored, before the page is recorded: its warnings
            # (a bound hit) are the page's (docs/extraction.md).
            extraction = await self.extraction.extract(
                snapshot, meta[PAGE_ID], page_url, source_ref, frontier.seed_url
            )
            if extraction.warnings:
                meta.setdefault(WARNINGS, []).extend(extraction.warnings)
            extracted.extend(extraction.items)
        outcome = Outcome(
            fetch_record(meta, snapshot),
            links=links,
            offhost_final_url=offhost,
            source_ref=source_ref,
            body_size=snap.body_size(snapshot) if work is None else work.body_size,
            skipped=skipped or None,
        )
        return outcome, snapshot

    async def _links(
        self,
        snapshot: Snapshot,
        origin: str,
        meta: dict[str, Any],
        skipped: list[list[Any]] | None = None,
        judge: Judge | None = None,
    ) -> list[str]:
        """Link discovery, bounded (``crawl/links.py``; a large page off the event loop).
        ``judge``: the seed's crawl policy (``crawl/scope.py``), else the same-origin rule."""
        body, url, bound = snapshot["body"], snapshot["url"], self.config.max_links_per_page
        links, warnings = await find_links_in_turn(body, url, origin, bound, skipped, judge)
        return self._found(links, warnings, meta)

    def _found(self, links: list[str], warnings: list[str], meta: dict[str, Any]) -> list[str]:
        if warnings:
            meta.setdefault(WARNINGS, []).extend(warnings)
            inc(self.crawler.stats, "frontier/link_bound_hit")
        return links
