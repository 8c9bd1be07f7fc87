"""Conditional GET with the stored snapshot's validators (docs/snapshots.md, "Revalidation").

With ``TRAVERSE_REVALIDATE``, in ``live`` and ``capture``: each hop whose URL is the
URL of the page's latest snapshot is sent with that snapshot's ``ETag`` and
``Last-Modified``, and a 304 to it stands for that snapshot, unchanged. Reads the
store, never writes it (the snapshot pipeline re-puts a 304 in capture mode).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.threads import deferToThread

from traverse_crawl.config.settings import get_config
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.attempt import CONDITIONAL_HEADERS, drop_validators
from traverse_crawl.meta_keys import PAGE_ID, REVALIDATE_PRIOR, REVALIDATE_SENT, SNAPSHOT, WARNINGS
from traverse_crawl.snapshots.model import Snapshot, with_flags
from traverse_crawl.snapshots.store import open_snapshot_store
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)


def request_identity(url: object) -> str | None:
    """Traverse's ``requestUrlIdentity``: the WHATWG href without its fragment."""
    if not isinstance(url, str):
        return None
    parsed = urls.parse(url)
    if parsed is None:
        return None
    parsed.hash = ""
    return str(parsed.href)


def _same_url(hop_url: str, prior_url: object) -> bool:
    """Whether a prior snapshot was fetched from this hop's URL (WHATWG href, fragment
    removed, query verbatim): validators never cross a redirect to another URL.

    A snapshot in an older store records the URL as Scrapy's ``Request`` rewrote
    it (``/x`` for ``/x?``, ``%7C`` for ``|``, ``urls.legacy_form``): that form
    matches too (docs/snapshots.md).
    """
    hop = request_identity(hop_url)
    prior = request_identity(prior_url)
    if hop is None or prior is None:
        return False
    return prior == hop or prior == request_identity(urls.legacy_form(hop_url))


class RevalidateMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if not config.revalidate:
            raise NotConfigured
        if config.mode == "replay":
            raise NotConfigured  # replay makes no request to revalidate
        self.crawler = crawler
        self.store = open_snapshot_store(config.store, crawler.settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RevalidateMiddleware:
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        meta = request.meta
        page_id = meta.get(PAGE_ID)
        if not isinstance(page_id, str) or meta.get("playwright"):
            return
        if REVALIDATE_PRIOR not in meta:
            meta[REVALIDATE_PRIOR] = await self._lookup(page_id, meta)
        prior: Snapshot | None = meta[REVALIDATE_PRIOR]
        if prior is None:
            return
        if not _same_url(request.url, prior.get("url")):
            return
        drop_validators(request.headers)
        sent = False
        for name, field in zip(CONDITIONAL_HEADERS, ("etag", "lastModified"), strict=True):
            value = prior.get(field)
            if value:  # JavaScript truthiness: absent or "" sends nothing
                request.headers[name] = str(value)
                sent = True
        if sent:
            meta[REVALIDATE_SENT] = request.url
            inc(self.crawler.stats, "revalidate/conditional")
            logger.debug("conditional GET %s", request.url)

    async def _lookup(self, page_id: str, meta: dict[str, Any]) -> Snapshot | None:
        try:
            prior: Snapshot | None = await maybe_deferred_to_future(
                deferToThread(self.store.latest, page_id)
            )
        except Exception as exc:  # the I/O edge: fetch unconditionally, as Traverse does
            warnings: list[str] = meta.setdefault(WARNINGS, [])
            warnings.append(
                f"revalidate: prior-snapshot lookup failed ({exc}); fetching unconditionally"
            )
            return None
        return prior

    def process_response(self, request: Request, response: Response) -> Response:
        meta = request.meta
        if response.status != 304 or meta.get(REVALIDATE_SENT) != request.url:
            return response
        prior: Snapshot | None = meta.get(REVALIDATE_PRIOR)
        if prior is None:
            return response
        # The prior, byte for byte (same fetchedAt, hash, body), for the spider to
        # record. At 650, before the redirect middleware (600) sees the response; any
        # other 304 is left alone, and the spider records http-error 304.
        meta[SNAPSHOT] = with_flags(prior, fromCache=True, notModified=True)
        inc(self.crawler.stats, "revalidate/not_modified")
        return response
