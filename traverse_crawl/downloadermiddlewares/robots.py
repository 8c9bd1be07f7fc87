"""robots.txt before every request and every redirect hop (SPEC §5, CONTRACT §2).

Replaces Scrapy's ``RobotsTxtMiddleware`` (STYLE §4). For each request, the
rules of its WHATWG origin are loaded once per crawl (concurrent requests to a
new origin await the same load) with a single attempt: no retries, no
redirects, no politeness wait, under ``DOWNLOAD_TIMEOUT`` and the egress guard.
Only the first 500 KiB of the body are downloaded and parsed (RFC 9309 §2.5).
A disallowed URL is never requested: the page fails with ``robots-denied``.
The redirect middleware re-sends every hop through the whole chain, so each
hop, on any origin, is checked here.

Settings: ``ROBOTSTXT_OBEY`` (off: this middleware is disabled),
``TRAVERSE_MODE`` (``replay``: disabled, no network at all),
``TRAVERSE_ROBOTS_POLICY`` (``fail-open`` | ``rfc9309``),
``TRAVERSE_ROBOTS_MATCHER`` (``traverse`` | ``rfc9309``),
``TRAVERSE_ROBOTS_CRAWL_DELAY_MAX``, ``TRAVERSE_MIN_DELAY``, ``USER_AGENT``.

Meta keys: ``traverse_robots`` (set on the robots.txt request itself; such
requests are not checked, get their own zero-delay slot ``robots <origin>``
from the politeness middleware, and are cut off at 500 KiB),
``traverse_warnings`` (the fail-open / rfc9309 warning is appended to the page
request that triggered the load, only), ``traverse_origin_delay`` (set with the
``rfc9309`` matcher when the group's Crawl-delay exceeds ``TRAVERSE_MIN_DELAY``,
capped at ``TRAVERSE_ROBOTS_CRAWL_DELAY_MAX``; the politeness middleware raises
the origin's delay from it).

Stats: ``robots/fetched`` (robots.txt requests made), ``robots/denied``,
``robots/fail_open``, ``robots/disallow_all``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured, StopDownload
from twisted.python.failure import Failure

from traverse_crawl.core import robots, urls
from traverse_crawl.core.config import get_config
from traverse_crawl.core.errors import FetchError
from traverse_crawl.exceptions import PageFailed, fetch_error_from_failure
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class RobotsMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if not config.robots_obey:
            logger.info("robots.txt is not consulted: ROBOTSTXT_OBEY is off")
            raise NotConfigured  # off by choice: no "Disabled" warning
        if config.mode == "replay":
            raise NotConfigured  # replay sends nothing
        self.crawler = crawler
        self.user_agent = config.user_agent
        self.token = robots.product_token(config.user_agent)
        self.policy = config.robots_policy
        self.matcher = config.robots_matcher
        self.min_delay = config.min_delay
        self.crawl_delay_max = config.robots_crawl_delay_max
        self.download_timeout = config.download_timeout
        self.download_maxsize = config.download_maxsize
        self.rules: dict[str, robots.RobotsRules] = {}
        self.loading: dict[str, asyncio.Task[robots.Decision]] = {}
        self.received: dict[int, int] = {}
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        if request.meta.get("traverse_robots"):
            return
        origin = urls.origin(request.url)
        rules = await self._rules_for(origin, request)
        if not rules.allows(robots.path_and_query(request.url)):
            inc(self.crawler.stats, "robots/denied")
            logger.debug("robots.txt denies %s", request.url)
            raise PageFailed(
                FetchError("robots-denied", f"robots.txt disallows {self.token} from {request.url}")
            )
        delay = rules.crawl_delay
        if delay is not None and min(delay, self.crawl_delay_max) > self.min_delay:
            request.meta["traverse_origin_delay"] = min(delay, self.crawl_delay_max)
        else:
            # A redirect hop carries the previous hop's meta: another origin's
            # Crawl-delay must not slow this one.
            request.meta.pop("traverse_origin_delay", None)

    async def _rules_for(self, origin: str, request: Request) -> robots.RobotsRules:
        cached = self.rules.get(origin)
        if cached is not None:
            return cached
        task = self.loading.get(origin)
        if task is not None:
            # Shielded: a cancelled waiter must not cancel the shared load.
            return (await asyncio.shield(task)).rules
        task = asyncio.ensure_future(self._load(origin))
        self.loading[origin] = task
        try:
            decision = await asyncio.shield(task)
        finally:
            if task.done() and not task.cancelled():
                self.loading.pop(origin, None)
        # Later pages reuse the cached rules silently (SPEC §4).
        if decision.warning is not None:
            request.meta.setdefault("traverse_warnings", []).append(decision.warning)
        return decision.rules

    async def _load(self, origin: str) -> robots.Decision:
        robots_request = Request(
            origin + "/robots.txt",
            headers={"Accept": "text/plain,*/*"},
            meta={
                "traverse_robots": True,
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
        decision = robots.decide(fetch, origin, self.user_agent, self.policy, self.matcher)
        self.rules[origin] = decision.rules
        if decision.warning is not None:
            # Loaded once per origin, so this logs once per origin (STYLE §9).
            logger.warning("%s", decision.warning)
            if isinstance(decision.rules, robots.DisallowAll):
                inc(self.crawler.stats, "robots/disallow_all")
            else:
                inc(self.crawler.stats, "robots/fail_open")
        return decision

    def bytes_received(self, data: bytes, request: Request, **kwargs: Any) -> None:
        """Stop a robots.txt download once 500 KiB are in (RFC 9309 §2.5)."""
        key = id(request)
        if key not in self.received or not request.meta.get("traverse_robots"):
            return
        if not self.received[key]:
            # The handler read the unbounded size when the body began; restore the
            # bound for HttpCompression, which reads the same key afterwards, so
            # a compressed robots.txt cannot inflate past DOWNLOAD_MAXSIZE.
            request.meta["download_maxsize"] = self.download_maxsize
        self.received[key] += len(data)
        if self.received[key] >= robots.MAX_ROBOTS_BYTES:
            raise StopDownload(fail=False)
