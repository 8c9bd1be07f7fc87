"""Every item a callback yields gets the ``sourceRef`` of the response it came from.

A spider middleware: for a response with a snapshot (``meta["traverse_source_ref"]``,
set by the capture middleware), each item of its callback's output — anything
``itemadapter.ItemAdapter`` takes: a dict, a ``scrapy.Item``, a dataclass, an
attrs object — gets that ref in the field ``TRAVERSE_ITEM_SOURCE_FIELD``
(default ``sourceRef``), unless it has one already. An item type without that
field (a ``scrapy.Item`` or dataclass that does not declare it) is passed on
unchanged, with one warning per class naming the field to declare. The
traverse spider's own page items carry their ``sourceRef`` already.

A request whose meta was copied from the response (``meta=response.meta``) would
carry that page's id and snapshot: those keys are dropped from it, so it gets
its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from itemadapter import ItemAdapter
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.spider import TraverseSpider
from traverse_crawl.fetch.attempt import ATTEMPT_KEYS
from traverse_crawl.meta_keys import PAGE_ID, REDIRECTS, SNAPSHOT_WRITE, SOURCE_REF

logger = logging.getLogger(__name__)

# What belongs to one page's response, never to a request made from it.
_PAGE_KEYS = ATTEMPT_KEYS | {PAGE_ID, SOURCE_REF, SNAPSHOT_WRITE, REDIRECTS}


class ItemSourceRefMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        # The traverse spider itself yields only its page items, which carry their
        # sourceRef, and requests it builds: it is spared this layer around every
        # output (a subclass may yield items of its own, and gets it).
        if type(crawler.spider) is TraverseSpider:
            raise NotConfigured
        self.field = get_config(crawler).item_source_field
        self.warned: set[type] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ItemSourceRefMiddleware:
        return cls(crawler)

    async def process_spider_output(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        meta = response.meta
        ref = meta.get(SOURCE_REF)
        page_id = meta.get(PAGE_ID)
        async for out in result:
            if isinstance(out, Request):
                if page_id is not None and out.meta.get(PAGE_ID) is page_id:
                    for key in _PAGE_KEYS:
                        out.meta.pop(key, None)
            elif ref is not None and not isinstance(out, PageItem):
                self._tag(out, ref)
            yield out

    def _tag(self, item: Any, ref: str) -> None:
        try:
            adapter = ItemAdapter(item)
        except TypeError:
            return  # not an item: the pipelines decide what it is
        field = self.field
        try:
            if adapter.get(field):
                return
            adapter[field] = ref
        except (KeyError, AttributeError, TypeError):  # no such field, or a frozen item
            cls = type(item)
            if cls not in self.warned:
                self.warned.add(cls)
                logger.warning(
                    "items of class %s.%s cannot take the field %r: declare it to give "
                    "each item the sourceRef of its response (TRAVERSE_ITEM_SOURCE_FIELD)",
                    cls.__module__,
                    cls.__qualname__,
                    field,
                )
