"""The crawl's start-up objects out of the garbage collector's way (issue 17).

Importing Scrapy, Twisted, lxml and the project leaves some 90,000 objects
that live as long as the process. CPython's full collections walk all of them:
three to four times in a 2,000-page crawl, 50-250 ms each, during which the
reactor neither reads a response nor sends a request (with 50 ms of latency per
response, each one emptied all 16 places: docs/performance.md, "Latency").

When the spider opens — every component built, no request sent yet — one full
collection clears what start-up left behind, then ``gc.freeze()`` moves every
surviving object to the permanent generation, which collections skip. Objects
the crawl creates are collected as before. ``gc.unfreeze()`` when the spider
closes hands them back, so a process that runs another crawl leaks nothing.
Hooked before Scrapy's CoreStats (priority -10): the collection is not
counted in the crawl's elapsed time.
"""

from __future__ import annotations

import gc

from scrapy import signals
from scrapy.crawler import Crawler


class FrozenStartupHeap:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrozenStartupHeap:
        extension = cls()
        crawler.signals.connect(extension.opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    def opened(self) -> None:
        gc.collect()
        gc.freeze()

    def closed(self) -> None:
        gc.unfreeze()
