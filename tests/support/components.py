"""Helpers of the component tests: middlewares built from a real ``Crawler``.

As in Scrapy's own suite, a component is built with
``scrapy.utils.test.get_crawler`` and its ``process_*`` methods are called
directly, with real ``Request``/``Response`` objects: each decision is checked
without a download, a clock or a server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from traverse_crawl.fetch.attempt import ATTEMPT_KEYS, RETRY_KEYS

ORIGIN = "http://a.test"
VALIDATORS = {"If-None-Match": '"v1"', "If-Modified-Since": "Tue, 01 Jul 2026 00:00:00 GMT"}
# A value for every per-attempt key, as a previous attempt could have left them.
STALE: dict[str, Any] = {key: "stale" for key in ATTEMPT_KEYS | RETRY_KEYS} | {"retry_times": 1}


def make_crawler(settings: dict[str, Any] | None = None) -> Crawler:
    crawler = get_crawler(settings_dict=settings)
    # Scrapy's get_retry_request counts in spider.crawler.stats.
    crawler.spider = crawler._create_spider()
    return crawler


def page_request(path: str = "/p", headers: dict[str, str] | None = None, **meta: Any) -> Request:
    """A page request as the spider makes it."""
    url = ORIGIN + path
    return Request(
        url,
        headers=headers,
        dont_filter=True,
        meta={
            "traverse_seed": 0,
            "traverse_index": 0,
            "traverse_page_id": f"seed::{url}",
            "traverse_warnings": [],
            "download_slot": ORIGIN,
            **meta,
        },
    )


def html(request: Request, body: str = "<p>ok</p>", status: int = 200, **headers: str) -> Response:
    return HtmlResponse(
        request.url,
        status=status,
        headers={"Content-Type": "text/html; charset=utf-8", **headers},
        body=body.encode("utf-8"),
        request=request,
    )


def reply(request: Request, status: int, **headers: str) -> Response:
    return Response(request.url, status=status, headers=headers, request=request)


def stats(crawler: Crawler) -> dict[str, Any]:
    assert crawler.stats is not None
    return crawler.stats.get_stats()


async def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Await a middleware coroutine as Scrapy does: as an asyncio task (its awaits
    of ``maybe_deferred_to_future`` need one), from a pytest-twisted test."""
    return await Deferred.fromFuture(asyncio.ensure_future(coroutine))
