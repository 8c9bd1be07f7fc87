"""The politeness state that a distributed crawl shares in Redis, one per crawler.

``shared_politeness(crawler)`` is None without ``REDIS_URL`` (a single-process
crawl: the middlewares keep their in-process paths and import no Redis code
path at all); with it, the crawl's ``Ledger`` and ``SharedRobots`` over one
asyncio Redis client, closed when the spider closes.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

from scrapy import signals
from scrapy.crawler import Crawler

from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.distributed.ledger import Ledger
from traverse_crawl.distributed.robots_share import SharedRobots

_ATTRIBUTE = "_traverse_shared_politeness"


class SharedPoliteness(NamedTuple):
    ledger: Ledger
    robots: SharedRobots


def shared_politeness(crawler: Crawler) -> SharedPoliteness | None:
    """The crawl's shared politeness state, or None for a single-process crawl."""
    found: SharedPoliteness | None = getattr(crawler, _ATTRIBUTE, None)
    if found is not None:
        return found
    config = RedisConfig.from_settings(crawler.settings)
    if not config.enabled:
        return None
    # Here: importing redis costs a single-process crawl a tenth of a second.
    from traverse_crawl.distributed.client import Keys, Retrying, client

    conn = client(config)
    keys = Keys(config.crawl_id)
    call = Retrying(config)
    lease = config.lease_timeout
    shared = SharedPoliteness(
        Ledger(conn, partial(keys.origin, "ledger"), lease, call),
        SharedRobots(conn, partial(keys.origin, "robots"), lease, call),
    )
    setattr(crawler, _ATTRIBUTE, shared)

    async def close() -> None:
        await shared.ledger.drain()
        await conn.aclose()

    crawler.signals.connect(close, signal=signals.spider_closed, weak=False)
    return shared
