"""robots.txt before every request and every redirect hop. Replaces ``RobotsTxtMiddleware``.

Each origin's robots.txt is loaded once per crawl, with a single attempt, and a
disallowed URL is never requested (``robots-denied``); the redirect middleware
re-sends every hop through the whole chain, so each hop is checked here. The same
load answers the sitemap discovery's robots.txt request (docs/robots.md).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured, StopDownload
from scrapy.http import Response
from twisted.python.failure import Failure

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.exceptions import PageFailed, fetch_error_from_failure
from traverse_crawl.fetch.request import WhatwgRequest
from traverse_crawl.meta_keys import ORIGIN_DELAY, ROBOTS, SITEMAP, WARNINGS
from traverse_crawl.politeness import robots
from traverse_crawl.politeness.shared import shared_politeness
from traverse_crawl.runtime.stop import CrawlStopped
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class RobotsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay sends nothing
        self.obey = config.robots_obey
        if not self.obey:
            if config.sitemaps == "off":
                logger.info("robots.txt is not consulted: ROBOTSTXT_OBEY is off")
                raise NotConfigured  # off by choice: no "Disabled" warning
            logger.info("ROBOTSTXT_OBEY is off: robots.txt is read for its Sitemap: lines only")
        self.crawler = crawler
        self.user_agent = config.user_agent
        self.token = robots.product_token(config.user_agent)
        self.policy = config.robots_policy
        self.matcher = config.robots_matcher
        self.min_delay = config.min_delay
        self.crawl_delay_max = config.robots_crawl_delay_max
        self.download_timeout = config.download_timeout
        self.download_maxsize = config.download_maxsize
        self.fetches: dict[str, robots.RobotsFetch] = {}
        self.rules: dict[str, robots.RobotsRules] = {}
        self.unclaimed: dict[str, str] = {}  # origin → warning no page has carried yet
        self.loading: dict[str, asyncio.Task[None]] = {}
        self.received: dict[int, int] = {}
        self.shared = shared_politeness(crawler)
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> Response | None:
        meta = request.meta
        if meta.get(ROBOTS):
            return None
        origin = urls.origin(request.url)
        if meta.get(SITEMAP) == "robots":
            return await self._robots_txt(origin, request)
        if not self.obey:
            return None
        await self._loaded(origin)
        rules = self.rules[origin]
        # The warning goes to the first page, whichever request started the load
        # (a sitemap request may): the page's warnings do not depend on timing.
        if SITEMAP not in meta and origin in self.unclaimed:
            warning = self.unclaimed.pop(origin)
            # Distributed: one page of the whole crawl gets it, as in one process.
            if self.shared is None or await self._claim_warning(origin, warning):
                meta.setdefault(WARNINGS, []).append(warning)
        if not rules.allows(robots.path_and_query(request.url)):
            inc(self.crawler.stats, "robots/denied")
            logger.debug("robots.txt denies %s", request.url)
            raise PageFailed(
                FetchError("robots-denied", f"robots.txt disallows {self.token} from {request.url}")
            )
        delay = rules.crawl_delay
        if delay is not None and min(delay, self.crawl_delay_max) > self.min_delay:
            meta[ORIGIN_DELAY] = min(delay, self.crawl_delay_max)
        else:
            # A redirect hop carries the previous hop's meta: another origin's
            # Crawl-delay must not slow this one.
            meta.pop(ORIGIN_DELAY, None)
        return None

    async def _claim_warning(self, origin: str, warning: str) -> bool:
        assert self.shared is not None
        try:
            return await self.shared.claim_robots_warning(origin)
        except Exception as exc:  # the I/O edge: Redis stayed unreachable
            self.unclaimed[origin] = warning  # the next page of the origin tries again
            raise CrawlStopped(f"robots warning of {origin} not claimed: {exc}") from None

    async def _robots_txt(self, origin: str, request: Request) -> Response:
        """The origin's robots.txt as loaded, for the sitemap discovery."""
        await self._loaded(origin)
        fetch = self.fetches[origin]
        if fetch.status is None:
            kind = fetch.error_kind or "network"
            raise PageFailed(FetchError(kind, f"robots.txt for {origin} unreachable ({kind})"))
        return Response(request.url, status=fetch.status, body=fetch.body, request=request)

    async def _loaded(self, origin: str) -> None:
        """Load the origin's robots.txt once; concurrent callers await the same load."""
        if origin in self.fetches:
            return
        task = self.loading.get(origin)
        if task is None:
            task = self.loading[origin] = asyncio.ensure_future(self._load(origin))
        try:
            # Shielded: a cancelled waiter must not cancel the shared load.
            await asyncio.shield(task)
        finally:
            if task.done() and not task.cancelled():
                self.loading.pop(origin, None)

    async def _load(self, origin: str) -> None:
        # No retries, no redirects, no politeness wait (its own zero-delay slot),
        # under DOWNLOAD_TIMEOUT and the egress guard like any request.
        if self.shared is None:
            fetch = await self._fetch(origin)
        else:
            # A distributed crawl: the first worker that needs the origin fetches,
            # the others wait for its copy in Redis (distributed/robots_share.py).
            try:
                fetch, fetched_here = await self.shared.load_robots(
                    origin, lambda: self._fetch(origin)
                )
            except Exception as exc:  # the I/O edge: Redis stayed unreachable
                raise CrawlStopped(f"robots.txt of {origin} not shared: {exc}") from None
            if not fetched_here:
                inc(self.crawler.stats, "robots/shared")
        self.fetches[origin] = fetch
        if not self.obey:
            return
        decision = robots.decide(fetch, origin, self.user_agent, self.policy, self.matcher)
        self.rules[origin] = decision.rules
        if decision.warning is not None:
            self.unclaimed[origin] = decision.warning
            # Loaded once per origin, so this logs once per origin.
            logger.warning("%s", decision.warning)
            if isinstance(decision.rules, robots.DisallowAll):
                inc(self.crawler.stats, "robots/disallow_all")
            else:
                inc(self.crawler.stats, "robots/fail_open")

    async def _fetch(self, origin: str) -> robots.RobotsFetch:
        robots_request = WhatwgRequest(
            origin + "/robots.txt",
            headers={"Accept": "text/plain,*/*"},
            meta={
                ROBOTS: True,
                "dont_retry": True,
                "dont_redirect": True,
                "handle_httpstatus_all": True,
                "download_slot": "robots " + origin,
                # The 500 KiB cut (bytes_received), not DOWNLOAD_MAXSIZE, ends the
                # transfer: a large robots.txt is read in part, not unreachable.
                "download_maxsize": 0,
            },
            dont_filter=True,
        )
        engine = self.crawler.engine
        assert engine is not None
        inc(self.crawler.stats, "robots/fetched")
        self.received[id(robots_request)] = 0
        try:
            response = await engine.download_async(robots_request)
        except Exception as exc:  # the I/O edge: every failure is a typed kind
            failure = Failure(exc)  # type: ignore[no-untyped-call]  # Twisted is untyped
            error = fetch_error_from_failure(
                failure, robots_request, self.download_timeout, self.download_maxsize
            )
            kind: robots.ErrorKind = "timeout" if error.kind == "timeout" else "network"
            logger.debug("robots.txt for %s failed: %s", origin, error.message)
            fetch = robots.RobotsFetch(error_kind=kind)
        else:
            fetch = robots.RobotsFetch(status=response.status, body=response.body)
        finally:
            self.received.pop(id(robots_request), None)
        return fetch

    def bytes_received(self, data: bytes, request: Request, **kwargs: Any) -> None:
        """Stop a robots.txt download once 500 KiB are in (RFC 9309 §2.5)."""
        key = id(request)
        if key not in self.received or not request.meta.get(ROBOTS):
            return
        if not self.received[key]:
            # The handler read the unbounded size when the body began; restore the
            # bound for HttpCompression, which reads the same key afterwards, so
            # a compressed robots.txt cannot inflate past DOWNLOAD_MAXSIZE.
            request.meta["download_maxsize"] = self.download_maxsize
        self.received[key] += len(data)
        if self.received[key] >= robots.MAX_ROBOTS_BYTES:
            raise StopDownload(fail=False)
