"""Manual redirects with the chain recorded. Replaces Scrapy's RedirectMiddleware.

Every 3xx but 304 with a ``Location`` is followed as a new request through the
whole middleware chain, so robots, the egress guard and politeness apply at each
hop; ``traverse_redirects`` keeps the URLs requested before the hop (the
snapshot's ``redirects``). Off-origin hops are followed; the spider decides what
the final URL means for link discovery.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.attempt import drop_validators, next_attempt
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.meta_keys import REDIRECTS
from traverse_crawl.stats import inc


class RedirectMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        config = get_config(crawler)
        if config.mode == "replay":
            raise NotConfigured  # replay answers every request before it
        self.max_redirects = config.redirect_max_times

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Request | Response:
        status = response.status
        if request.meta.get("dont_redirect") or not 300 <= status < 400 or status == 304:
            return response
        # A missing Location is checked before the hop count, as Traverse does.
        location = response.headers.get(b"Location")
        if not location:
            raise PageFailed(
                FetchError(
                    "http-error",
                    f"redirect {status} with no Location header from {request.url}",
                    status,
                )
            )
        chain: list[str] = request.meta.get(REDIRECTS, [])
        if len(chain) >= self.max_redirects:
            start = chain[0] if chain else request.url
            raise PageFailed(
                FetchError(
                    "too-many-redirects",
                    f"exceeded {self.max_redirects} redirects starting at {start}",
                )
            )
        try:
            target = location.decode("utf-8")
        except UnicodeDecodeError:
            target = location.decode("latin-1")
        # Resolved against the current hop, with WHATWG rules; an unparsable or
        # non-http(s) target is invalid-url, never sent (so never retried).
        next_url = urls.normalize(target, request.url)
        if next_url is None:
            raise PageFailed(
                FetchError("invalid-url", f'redirect to invalid URL "{target}" from {request.url}')
            )
        # A new attempt at another URL (fetch/attempt.py): its own retries, and no
        # validators, which belong to the URL that produced them.
        meta = next_attempt(request.meta)
        meta[REDIRECTS] = [*chain, request.url]
        meta["download_slot"] = urls.origin(next_url)
        headers = request.headers.copy()
        drop_validators(headers)
        drop_credentials(headers, request.url, next_url)
        inc(self.crawler.stats, "redirect/count")
        if becomes_get(status, request.method):
            for name in CONTENT_HEADERS:
                headers.pop(name, None)
            # cls=Request: a FormRequest's or JsonRequest's constructor would put its
            # own Content-Type back.
            return request.replace(
                cls=Request, url=next_url, meta=meta, headers=headers, dont_filter=True,
                method="GET", body=b"",
            )  # fmt: skip
        return request.replace(url=next_url, meta=meta, headers=headers, dont_filter=True)


# The headers that describe a request's body, dropped with the body.
CONTENT_HEADERS = (
    b"Content-Type",
    b"Content-Length",
    b"Content-Encoding",
    b"Content-Language",
    b"Content-Location",
)
DEFAULT_PORTS = {"http": 80, "https": 443}


def becomes_get(status: int, method: str) -> bool:
    """Whether the hop after ``status`` is a GET without a body (RFC 9110, 15.4)."""
    method = method.upper()
    if status in (301, 302):
        return method == "POST"
    if status == 303:
        return method not in ("GET", "HEAD")
    return False


def drop_credentials(headers: MutableMapping[Any, Any], from_url: str, to_url: str) -> None:
    """Remove, in place, the credentials that must not follow a hop to ``to_url``."""
    source, target = urlsplit(from_url), urlsplit(to_url)
    if source.hostname != target.hostname or target.scheme not in (source.scheme, "https"):
        headers.pop(b"Cookie", None)
    source_port = source.port or DEFAULT_PORTS.get(source.scheme)
    target_port = target.port or DEFAULT_PORTS.get(target.scheme)
    if (source.scheme, source.hostname, source_port) != (
        target.scheme,
        target.hostname,
        target_port,
    ):
        headers.pop(b"Authorization", None)
