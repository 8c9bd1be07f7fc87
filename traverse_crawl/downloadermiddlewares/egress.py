"""The egress guard: no request to a non-public address leaves (SPEC §18.2, CONTRACT §2).

Every request passes here before anything is sent — seeds, discovered pages,
robots.txt, every redirect hop and every retry, since each is a new trip
through the downloader middlewares. The host is checked by name and literal
form, resolved once without blocking the reactor, and every address it resolves
to is checked (``traverse_crawl.core.egress``). A refused request fails its page
with ``egress-denied`` (a ``PageFailed``, which is an ``IgnoreRequest``: never
retried, nothing sent). A DNS failure is not a refusal: it is raised as Scrapy's
``CannotResolveHostError``, so it is retried and recorded like any ``network``
error. The checked addresses are pinned in ``traverse_crawl.resolver.PinnedResolver``
so the connection goes to exactly those addresses (no DNS rebinding window).

Settings: ``TRAVERSE_EGRESS_GUARD`` (default ``True``; ``False`` disables this
middleware), ``TRAVERSE_EGRESS_ALLOW`` (exact origins exempt from every check;
their hosts are still resolved once and pinned), ``DNS_TIMEOUT`` and
``DOWNLOAD_TIMEOUT`` (the lookup is bounded by the shorter). In
``TRAVERSE_MODE=replay`` nothing is sent, so the guard is off.

Stats: ``egress/checked`` (requests seen), ``egress/denied``,
``egress/allowed_by_setting``.
"""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from traverse_crawl.core import egress, urls
from traverse_crawl.core.config import get_config
from traverse_crawl.exceptions import PageFailed
from traverse_crawl.resolver import PinnedResolver
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


class EgressGuardMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if not config.egress_guard or config.mode == "replay":
            raise NotConfigured
        self.crawler = crawler
        self.allow = config.egress_allow
        self.download_timeout = config.download_timeout
        self.resolver = PinnedResolver.ensure_installed(crawler)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> EgressGuardMiddleware:
        return cls(crawler)

    def spider_opened(self) -> None:
        # From now on the resolver also refuses unpinned non-public lookups,
        # except for the allowed origins' hosts (a proxy, for instance).
        self.resolver.guard(self, _host_ports(self.allow))

    def spider_closed(self) -> None:
        self.resolver.release(self)

    async def process_request(self, request: Request) -> None:
        inc(self.crawler.stats, "egress/checked")
        # DNS is part of the attempt: DOWNLOAD_TIMEOUT bounds it as well as DNS_TIMEOUT.
        timeout = min(
            self.resolver.timeout, request.meta.get("download_timeout", self.download_timeout)
        )

        async def resolve(host: str, port: int) -> list[str]:
            try:
                lookup = self.resolver.lookup(host, port, timeout)
                return await maybe_deferred_to_future(lookup)
            except defer.TimeoutError:
                raise TimeoutError(f"no answer within {timeout:g}s") from None

        verdict = await egress.evaluate(request.url, self.allow, resolve)
        if verdict.error is not None:
            if verdict.error.kind == "egress-denied":
                inc(self.crawler.stats, "egress/denied")
                logger.debug("%s", verdict.error.message)
                raise PageFailed(verdict.error)
            # Scrapy's own DNS error: RETRY_EXCEPTIONS lists it, so it is retried.
            raise CannotResolveHostError(verdict.error.message)
        if verdict.allowed_by_setting:
            inc(self.crawler.stats, "egress/allowed_by_setting")
        if verdict.addresses:
            self.resolver.pin(verdict.host, verdict.port, verdict.addresses)


def _host_ports(allow: frozenset[str]) -> list[tuple[str, int]]:
    pairs = []
    for origin in allow:
        parsed = urls.parse(origin)
        if parsed is None:
            continue
        host = egress.host_key(str(parsed.hostname))
        scheme = str(parsed.protocol)
        port = int(parsed.port) if parsed.port else egress.NETWORK_SCHEMES.get(scheme, 0)
        if host is not None:
            pairs.append((host, port))
    return pairs
