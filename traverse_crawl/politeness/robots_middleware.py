"""robots.txt before every request and every redirect hop (SPEC §5, CONTRACT §2).

Replaces Scrapy's ``RobotsTxtMiddleware`` (STYLE §4). For each request, the
rules of its WHATWG origin are loaded once per crawl (concurrent requests to a
new origin await the same load) with a single attempt: no retries, no
redirects, no politeness wait, under ``DOWNLOAD_TIMEOUT`` and the egress guard.
Only the first 500 KiB of the body are downloaded and parsed (RFC 9309 §2.5).
A disallowed URL is never requested: the page fails with ``robots-denied``.
The redirect middleware re-sends every hop through the whole chain, so each
hop, on any origin, is checked here.

Sitemaps (CONTRACT §9): a request with ``traverse_sitemap = "robots"`` (the
sitemap discovery of a seed) is answered here with the origin's robots.txt as
loaded — the same single fetch, never a second one. When ``ROBOTSTXT_OBEY`` is
off and ``TRAVERSE_SITEMAPS`` is not, robots.txt is still loaded for that,
and nothing is checked against it.

Settings: ``ROBOTSTXT_OBEY`` (off: nothing is checked; the middleware is
disabled unless ``TRAVERSE_SITEMAPS`` needs robots.txt),
``TRAVERSE_MODE`` (``replay``: disabled, no network at all),
``TRAVERSE_ROBOTS_POLICY`` (``fail-open`` | ``rfc9309``),
``TRAVERSE_ROBOTS_MATCHER`` (``traverse`` | ``rfc9309``),
``TRAVERSE_ROBOTS_CRAWL_DELAY_MAX``, ``TRAVERSE_MIN_DELAY``, ``USER_AGENT``.

Meta keys: ``traverse_robots`` (set on the robots.txt request itself; such
requests are not checked, get their own zero-delay slot ``robots <origin>``
from the politeness middleware, and are cut off at 500 KiB),
``traverse_sitemap`` (a sitemap request, checked like a page but never given
a page warning; ``"robots"``: answered with robots.txt),
``traverse_warnings`` (the fail-open / rfc9309 warning is appended to the first
page request that gets the origin's rules, only), ``traverse_origin_delay`` (set with the
``rfc9309`` matcher when the group's Crawl-delay exceeds ``TRAVERSE_MIN_DELAY``,
capped at ``TRAVERSE_ROBOTS_CRAWL_DELAY_MAX``; the politeness middleware raises
the origin's delay from it).

Distributed crawls (``REDIS_URL``): robots.txt is fetched once per origin for the
whole crawl, by the first worker that needs it; the others wait for that copy in
Redis and parse it themselves (``distributed/robots_share.py``), and the
fail-open / rfc9309 warning goes to one page of the crawl. Redis unreachable
for longer than ``TRAVERSE_REDIS_RETRY``: the page is not sent (``CrawlStopped``).

Stats: ``robots/fetched`` (robots.txt requests made), ``robots/shared``
(origins whose robots.txt another worker fetched), ``robots/denied``,
``robots/fail_open``, ``robots/disallow_all``.
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
from traverse_crawl.crawl.stop import CrawlStopped
from traverse_crawl.distributed.shared_politeness import shared_politeness
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.exceptions import PageFailed, fetch_error_from_failure
from traverse_crawl.fetch.request import WhatwgRequest
from traverse_crawl.meta_keys import ORIGIN_DELAY, ROBOTS, SITEMAP, WARNINGS
from traverse_crawl.politeness import robots
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
        shared = shared_politeness(crawler)
        self.shared = None if shared is None else shared.robots
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
            return await self.shared.claim_warning(origin)
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
        if self.shared is None:
            fetch = await self._fetch(origin)
        else:
            # A distributed crawl: one worker fetches, every worker uses its copy.
            try:
                fetch, fetched_here = await self.shared.load(origin, lambda: self._fetch(origin))
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
            # Loaded once per origin, so this logs once per origin (STYLE §9).
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
        except Exception as exc:  # the I/O edge: every failure is a typed kind (STYLE §8)
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
