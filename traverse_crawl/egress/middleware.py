"""The egress guard: no request to a non-public address leaves (docs/egress.md).

Every request passes here before anything is sent (seeds, pages, robots.txt,
every redirect hop and retry). Its host is checked by name and form, resolved
without blocking the reactor, and every address checked (``egress/rules.py``);
a refusal fails the page with ``egress-denied``, never retried. The checked
addresses are pinned in ``PinnedResolver`` for the connection.
"""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CannotResolveHostError, NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer

from traverse_crawl.config.settings import get_config
from traverse_crawl.egress import rules as egress
from traverse_crawl.egress.dns_cache import AnswerCache
from traverse_crawl.egress.resolver import PinnedResolver
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.exceptions import PageFailed
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
        self.answers = AnswerCache(config.dns_ttl_max, self.resolver.clock)
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
        self.answers.clear()

    async def process_request(self, request: Request) -> None:
        inc(self.crawler.stats, "egress/checked")
        # DNS is part of the attempt: DOWNLOAD_TIMEOUT bounds it as well as DNS_TIMEOUT.
        timeout = min(
            self.resolver.timeout, request.meta.get("download_timeout", self.download_timeout)
        )

        async def resolve(host: str, port: int) -> tuple[str, ...]:
            kept = self.answers.get(host)
            if kept is not None:
                inc(self.crawler.stats, "egress/dns_reused")
                return kept  # checked again by evaluate(), like a fresh answer
            inc(self.crawler.stats, "egress/dns_lookup")
            try:
                answer = await maybe_deferred_to_future(self.resolver.lookup(host, port, timeout))
            except defer.TimeoutError:
                raise TimeoutError(f"no answer within {timeout:g}s") from None
            self.answers.put(host, answer)
            return answer.addresses

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
