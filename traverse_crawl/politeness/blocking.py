"""A crawl's push-back state: each origin's back-off and pace, block pages, given-up origins.

One ``Pushback`` per crawler (``pushback(crawler)``), shared by the politeness and retry
middlewares and the WARC writer: the politeness middleware's slots hold its
``OriginPace``s, ``judge`` decides once per attempt, at ``response_downloaded`` (before
any middleware or the WARC writer keeps anything), whether the response is a block
page, and the retry middleware counts the ``blocked`` pages in a row of each origin.
docs/crawling-real-sites.md, "Sites that push back".
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.content import decode_text, resolve_content_type
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.meta_keys import BLOCKED, HINT, ROBOTS, SEED, WARNINGS
from traverse_crawl.politeness.backoff import OriginPace
from traverse_crawl.politeness.block_pages import (
    BlockPatterns,
    BlockRuns,
    blocked_message,
    given_up_message,
    given_up_warning,
)
from traverse_crawl.politeness.robots_meta import decoded_head
from traverse_crawl.stats import inc

_ATTRIBUTE = "_traverse_pushback"

logger = logging.getLogger(__name__)


class Pushback:
    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        self.cap = config.max_delay
        self.factor = config.delay_factor
        self.patterns = BlockPatterns(config.block_patterns)
        self.runs = BlockRuns(config.block_stop_after)
        self.maxsize = config.download_maxsize
        self.paces: dict[str, OriginPace] = {}

    def pace(self, origin: str) -> OriginPace:
        pace = self.paces.get(origin)
        if pace is None:
            pace = self.paces[origin] = OriginPace(self.cap, self.factor)
        return pace

    def extra(self, origin: str) -> float:
        pace = self.paces.get(origin)
        return 0.0 if pace is None else pace.extra

    def slowed(self, origin: str) -> float:
        """The origin's back-off or pace (seconds), 0 while it does not push back."""
        pace = self.paces.get(origin)
        return 0.0 if pace is None else max(pace.extra, pace.pace)

    def slowest(self, count: int) -> list[tuple[str, float]]:
        """The ``count`` origins with the longest back-off or pace, longest first."""
        delays = [(o, max(p.extra, p.pace)) for o, p in self.paces.items() if p.extra or p.pace]
        delays.sort(key=lambda item: (-item[1], item[0]))
        return delays[:count]

    def judge(self, request: Request, response: Response) -> str | None:
        """The ``blocked`` message of this attempt, or None; decided once per attempt
        (kept in ``traverse_blocked``) on the body as Scrapy will decode it: the
        payload with its content coding undone, or a rendered page's document."""
        meta = request.meta
        if not self.patterns or meta.get(ROBOTS):
            return None
        if BLOCKED in meta:
            verdict: str | None = meta[BLOCKED]
            return verdict
        header = _header(response, b"Content-Type")
        if "playwright" in response.flags:
            text = response.body.decode("utf-8", "replace")
        elif resolve_content_type(header, meta.get(HINT)) == "html":
            body = response.body
            coding = _header(response, b"Content-Encoding")
            if coding:
                body = decoded_head(body, coding, self.maxsize or len(body) * 64 + 1)
            text = decode_text(body, header)
        else:
            meta[BLOCKED] = None
            return None
        pattern = self.patterns.blocked(text)
        verdict = (
            None if pattern is None else blocked_message(response.url, response.status, pattern)
        )
        meta[BLOCKED] = verdict
        return verdict

    def give_up(self, origin: str, run: int) -> None:
        """``origin`` gave ``run`` block pages in a row: its requests waiting in its slot
        fail unsent, and so does any later one (``given_up``)."""
        self.runs.given_up.setdefault(origin, run)
        logger.warning(
            "%s gave %d block pages in a row (TRAVERSE_BLOCK_STOP_AFTER): "
            "its queued pages are recorded blocked without a request",
            origin, run,
        )  # fmt: skip
        engine = self.crawler.engine
        slot = engine.downloader.slots.get(origin) if engine is not None else None
        if slot is None:
            return
        if slot.latercall is not None:
            slot.latercall.cancel()
            slot.latercall = None
        while slot.queue:
            queued, deferred = slot.queue.popleft()
            failure = self.given_up(queued)
            assert failure is not None
            inc(self.crawler.stats, "politeness/given_up_pages")
            deferred.errback(failure)

    def given_up(self, request: Request) -> PageFailed | None:
        """The failure of a request to an origin given up, or None; the first page of
        each seed there gets the warning that says so."""
        if not self.runs.given_up:
            return None
        origin = urls.origin(request.url)
        run = self.runs.given_up.get(origin)
        if run is None:
            return None
        meta = request.meta
        if SEED in meta and self.runs.warn_once(meta[SEED], origin):
            meta.setdefault(WARNINGS, []).append(given_up_warning(origin, run))
        return PageFailed(FetchError("blocked", given_up_message(request.url, origin, run)))


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None


def pushback(crawler: Any) -> Pushback:
    """The crawl's push-back state, made on first use."""
    state: Pushback | None = getattr(crawler, _ATTRIBUTE, None)
    if state is None:
        state = Pushback(crawler)
        setattr(crawler, _ATTRIBUTE, state)
    return state
