"""Manual redirects with the chain recorded. Replaces Scrapy's RedirectMiddleware.

Every 3xx but 304 with a ``Location`` is followed as a new request through the
whole middleware chain, so robots, the egress guard and politeness apply at each
hop; ``traverse_redirects`` keeps the URLs requested before the hop (the
snapshot's ``redirects``). Off-origin hops are followed; the spider decides what
the final URL means for link discovery.
"""

from __future__ import annotations

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
        # 300, 301, 302, 303, 307 and 308 alike: every request is a GET. A missing
        # Location is checked before the hop count, as Traverse does.
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
        if urls.origin(next_url) != urls.origin(request.url):
            headers.pop(b"Authorization", None)  # credentials from userinfo stay on their origin
        inc(self.crawler.stats, "redirect/count")
        return request.replace(url=next_url, meta=meta, headers=headers, dont_filter=True)
