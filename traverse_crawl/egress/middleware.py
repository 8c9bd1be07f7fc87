"""The egress guard: no request to a non-public address leaves (SPEC §18.2, CONTRACT §2).

Every request passes here before anything is sent — seeds, discovered pages,
robots.txt, every redirect hop and every retry, since each is a new trip
through the downloader middlewares. The host is checked by name and literal
form, resolved once without blocking the reactor, and every address it resolves
to is checked (``traverse_crawl.egress.rules``). A refused request fails its page
with ``egress-denied`` (a ``PageFailed``, which is an ``IgnoreRequest``: never
retried, nothing sent). A DNS failure is not a refusal: it is raised as Scrapy's
``CannotResolveHostError``, so it is retried and recorded like any ``network``
error. The checked addresses are pinned in ``traverse_crawl.egress.resolver.PinnedResolver``
so the connection goes to exactly those addresses (no DNS rebinding window).

A host's answer is kept for the crawl for a bounded lifetime (``egress/dns_cache.py``:
the records' TTL if the resolver reports one, else 60 s, within 1 s and
``TRAVERSE_DNS_TTL_MAX``), so a host is not resolved again for every request;
the addresses are still checked and pinned for every request, and a lookup
after expiry is checked like the first.

Settings: ``TRAVERSE_EGRESS_GUARD`` (default ``True``; ``False`` disables this
middleware), ``TRAVERSE_EGRESS_ALLOW`` (exact origins exempt from every check;
their hosts are still resolved once and pinned), ``DNS_TIMEOUT`` and
``DOWNLOAD_TIMEOUT`` (the lookup is bounded by the shorter), ``TRAVERSE_DNS_TTL_MAX``
(the longest an answer is reused; 0 resolves for every request). In
``TRAVERSE_MODE=replay`` nothing is sent, so the guard is off.

Stats: ``egress/checked`` (requests seen), ``egress/denied``,
``egress/allowed_by_setting``, ``egress/dns_lookup`` (answers asked of the
resolver), ``egress/dns_reused`` (answers taken from the crawl's cache).
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
