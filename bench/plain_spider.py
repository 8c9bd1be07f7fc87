"""The baseline: a minimal, idiomatic Scrapy spider doing the same same-host BFS.

    scrapy runspider bench/plain_spider.py -a url=http://127.0.0.1:PORT/index.html \
        -s DEPTH_LIMIT=50 -s CLOSESPIDER_ITEMCOUNT=2000

What it does, and why so: the comment above ``PlainSpider``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response


# What a Scrapy user would write from the tutorial: ``response.css("a::attr(href)")``,
# ``response.follow``, Scrapy's default dupefilter, a same-host check, ``DEPTH_LIMIT``,
# ``CLOSESPIDER_ITEMCOUNT`` as the page cap, and one small item per page. BFS order
# is Scrapy's documented recipe (``DEPTH_PRIORITY = 1`` with FIFO queues). It is run
# outside the project (no ``scrapy.cfg`` above its working directory), so none of
# traverse_crawl's settings or components apply; only the settings below and
# Scrapy's defaults (16 concurrent requests, 8 per domain, no delay) do.
class PlainSpider(scrapy.Spider):
    name = "plain"
    custom_settings = {
        "ROBOTSTXT_OBEY": True,  # as in Scrapy's project template, and as traverse does
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
    }

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = url
        self.netloc = urlsplit(url).netloc

    async def start(self) -> Any:
        yield scrapy.Request(self.seed, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {
            "url": response.url,
            "status": response.status,
            "title": response.css("title::text").get(),
            "bytes": len(response.body),
        }
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href)
            if urlsplit(url).netloc == self.netloc:
                yield response.follow(url, callback=self.parse)
