"""The downloader slot that asks the shared ledger (``distributed/ledger_slot.py``), against a
real redis-server that goes away."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.core.downloader import Downloader
from scrapy.utils.test import get_crawler
from twisted.internet.defer import Deferred

from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.unit.distributed.test_ledger_and_shared_robots import ORIGIN, clients, ledger, on_asyncio
from traverse_crawl.distributed.ledger_slot import LedgerSlot

pytestmark = pytest.mark.redis


@on_asyncio
async def test_requests_queued_after_the_ledger_was_lost_are_not_left_waiting(redis_server):  # noqa: F811
    """Redis gone: the slot fails its queued requests as never sent, and those queued
    after that too (a request left in the queue would hold the worker's stop forever)."""
    downloader = Downloader(get_crawler(Spider))
    failed: list[str] = []

    def enqueue(slot: LedgerSlot, path: str) -> None:
        done: Deferred[Any] = Deferred()
        done.addErrback(lambda failure: failed.append(f"{failure.type.__name__} {path}"))
        slot.queue.append((Request(ORIGIN + path), done))
        downloader._process_queue(slot)  # what the downloader does with a new request

    async def until(count: int) -> None:
        while len(failed) < count:
            await asyncio.sleep(0.01)

    async with clients(redis_server.url, 1) as (conn,):
        redis_server.stop()
        slot = LedgerSlot(2, 0.0, origin=ORIGIN, ledger=ledger(conn), downloader=downloader,
                          stats=None)  # fmt: skip
        try:
            enqueue(slot, "/1")
            enqueue(slot, "/2")
            await asyncio.wait_for(until(2), 10)
            enqueue(slot, "/3")
            await asyncio.wait_for(until(3), 10)
        finally:
            slot.close()
    assert failed == ["CrawlStopped /1", "CrawlStopped /2", "CrawlStopped /3"]
