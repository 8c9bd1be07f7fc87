"""The politeness a distributed crawl shares in Redis: an extension, one per crawler.

Added to a crawl only with ``REDIS_URL`` (the add-on's ``DISTRIBUTED``). Built before
the downloader, it puts itself on the crawler (``politeness/shared.py``), where the
robots, retry and politeness middlewares find it: the crawl's ``Ledger`` and
``SharedRobots`` over one asyncio Redis client, closed when the spider closes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.settings import get_config
from traverse_crawl.distributed.client import Keys, Retrying, client
from traverse_crawl.distributed.ledger import Ledger
from traverse_crawl.distributed.ledger_slot import LedgerSlot
from traverse_crawl.distributed.robots_share import SharedRobots
from traverse_crawl.politeness.robots import RobotsFetch
from traverse_crawl.politeness.shared import share_politeness


class SharedPoliteness:
    """The crawl's per-origin ledger and robots.txt copies, as this worker sees them."""

    def __init__(self, crawler: Crawler, config: RedisConfig) -> None:
        self.crawler = crawler
        self.conn = client(config)
        keys = Keys(config.crawl_id)
        call = Retrying(config)
        lease = config.lease_timeout
        self.ledger = Ledger(self.conn, partial(keys.origin, "ledger"), lease, call)
        self.robots = SharedRobots(self.conn, partial(keys.origin, "robots"), lease, call)
        self.cap = get_config(crawler).max_delay
        share_politeness(crawler, self)
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedPoliteness:
        config = RedisConfig.from_settings(crawler.settings)
        if not config.enabled:
            raise NotConfigured
        return cls(crawler, config)

    def origin_slot(self, concurrency: int, delay: float, origin: str) -> LedgerSlot:
        engine = self.crawler.engine
        assert engine is not None  # slots are made for requests the engine downloads
        return LedgerSlot(
            concurrency,
            delay,
            origin=origin,
            ledger=self.ledger,
            downloader=engine.downloader,
            stats=self.crawler.stats,
            cap=self.cap,
        )

    def hold_off(self, origin: str, seconds: float) -> None:
        self.ledger.hold_off(origin, seconds)

    def push_back(self, origin: str, retry_after: float | None) -> None:
        self.ledger.push_back(origin, retry_after, self.cap)

    def answered(self, origin: str, pace: float, success: bool) -> None:
        self.ledger.answered(origin, pace, success)

    def page_blocked(self, origin: str, stop_after: int) -> None:
        from traverse_crawl.politeness.blocking import pushback

        state = pushback(self.crawler)

        def then(run: int, gone: int) -> None:
            slot = self.crawler.engine.downloader.slots.get(origin) if self.crawler.engine else None
            if isinstance(slot, LedgerSlot):
                slot.blocked_run = run
            if gone and origin not in state.runs.given_up:
                state.give_up(origin, gone)

        self.ledger.page_blocked(origin, stop_after, then)

    def run_ended(self, origin: str) -> None:
        self.ledger.run_ended(origin)

    async def claim_given_up_warning(self, origin: str, seed: int) -> bool:
        key = self.ledger.key(origin)
        return bool(await self.ledger.call(lambda: self.conn.hsetnx(key, f"warned:{seed}", "1")))

    async def load_robots(
        self, origin: str, fetch: Callable[[], Awaitable[RobotsFetch]]
    ) -> tuple[RobotsFetch, bool]:
        return await self.robots.load(origin, fetch)

    async def claim_robots_warning(self, origin: str) -> bool:
        return await self.robots.claim_warning(origin)

    async def close(self) -> None:
        await self.ledger.drain()
        await self.conn.aclose()
