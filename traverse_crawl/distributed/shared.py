"""The politeness state that a distributed crawl shares in Redis, one per crawler.

``shared_politeness(crawler)`` is None without ``REDIS_URL`` (a single-process
crawl: the middlewares keep their in-process paths and import no Redis code
path at all); with it, the crawl's ``Ledger`` and ``SharedRobots`` over one
asyncio Redis client, closed when the spider closes.
"""

from __future__ import annotations

from typing import NamedTuple

from scrapy import signals
from scrapy.crawler import Crawler

from traverse_crawl.distributed.ledger import Ledger
from traverse_crawl.distributed.robotsshare import SharedRobots

_ATTRIBUTE = "_traverse_shared_politeness"


class SharedPoliteness(NamedTuple):
    ledger: Ledger
    robots: SharedRobots


def shared_politeness(crawler: Crawler) -> SharedPoliteness | None:
    """The crawl's shared politeness state, or None for a single-process crawl."""
    found: SharedPoliteness | None = getattr(crawler, _ATTRIBUTE, None)
    if found is not None:
        return found
    url = crawler.settings.get("REDIS_URL")
    if not url:
        return None
    import redis.asyncio  # here: importing redis costs a single-process crawl ~0.1 s

    conn = redis.asyncio.Redis.from_url(str(url), decode_responses=True)
    crawl_id = crawler.settings.get("TRAVERSE_CRAWL_ID") or "traverse"
    lease = float(crawler.settings.get("TRAVERSE_LEASE_TIMEOUT") or 60.0)
    prefix = f"traverse:{crawl_id}:"
    shared = SharedPoliteness(
        Ledger(conn, lambda origin: f"{prefix}ledger:{origin}", lease),
        SharedRobots(conn, lambda origin: f"{prefix}robots:{origin}", lease),
    )
    setattr(crawler, _ATTRIBUTE, shared)

    async def close() -> None:
        await shared.ledger.drain()
        await conn.aclose()

    crawler.signals.connect(close, signal=signals.spider_closed, weak=False)
    return shared
