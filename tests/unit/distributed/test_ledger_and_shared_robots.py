"""The per-origin ledger and the shared robots.txt in a real redis-server.

Several workers are simulated in one process: each has its own Redis client and
its own ``Ledger``/``SharedRobots``, as separate processes would. Times are
Redis's own (``TIME``), with short real delays: nothing is faked.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import random
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import pytest
import pytest_twisted
import redis.asyncio
from twisted.internet.defer import Deferred

from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from traverse_crawl.distributed.ledger import CLEARANCE, Ledger
from traverse_crawl.distributed.robots_share import SharedRobots
from traverse_crawl.politeness.robots import RobotsFetch

pytestmark = pytest.mark.redis

ORIGIN = "http://a.test"
PREFIX = "traverse:test:"


def on_asyncio(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., Any]:
    """Run an ``async def`` test as an asyncio task on the reactor's loop (redis-py's
    client needs asyncio futures, which a Twisted coroutine cannot await)."""

    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> None:
        await Deferred.fromFuture(asyncio.ensure_future(test(*args, **kwargs)))

    return pytest_twisted.ensureDeferred(run)


@asynccontextmanager
async def clients(url: str, n: int) -> AsyncIterator[list[redis.asyncio.Redis]]:
    conns = [redis.asyncio.Redis.from_url(url, decode_responses=True) for _ in range(n)]
    try:
        yield conns
    finally:
        for conn in conns:
            await conn.aclose()


def ledger(conn: redis.asyncio.Redis, lease: float = 30.0) -> Ledger:
    return Ledger(conn, lambda origin: f"{PREFIX}ledger:{origin}", lease)


async def now(conn: redis.asyncio.Redis) -> float:
    seconds, micros = await conn.time()
    return float(seconds) + micros / 1e6


async def take(book: Ledger, delay: float, retry: bool = False) -> tuple[str, bool]:
    """Ask until the ledger grants the origin, sleeping what it says, as a slot does."""
    await book.settled(ORIGIN)
    token = book.token()
    expired = False
    while True:
        grant = await book.acquire(ORIGIN, token, delay, retry)
        expired = expired or grant.expired
        if grant.granted:
            return token, expired
        await asyncio.sleep(grant.wait)


@on_asyncio
async def test_one_request_at_a_time_and_the_delay_between_them_across_workers(redis_server):  # noqa: F811
    delay = 0.05
    spans: list[tuple[float, float]] = []
    async with clients(redis_server.url, 3) as conns:

        async def worker(conn: redis.asyncio.Redis) -> None:
            book = ledger(conn)
            for _ in range(6):
                token, _ = await take(book, delay)
                start = await now(conn)
                await asyncio.sleep(random.uniform(0.0, 0.02))  # the download
                spans.append((start, await now(conn)))
                book.release(ORIGIN, token)

        await asyncio.gather(*(worker(c) for c in conns))
    spans.sort()
    assert len(spans) == 18
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(spans)]
    assert min(gaps) >= delay, gaps


@on_asyncio
async def test_without_a_delay_nothing_is_held(redis_server):  # noqa: F811
    async with clients(redis_server.url, 2) as (a, b):
        first, second = ledger(a), ledger(b)
        assert (await first.acquire(ORIGIN, first.token(), 0.0, False)).granted
        assert (await second.acquire(ORIGIN, second.token(), 0.0, False)).granted
        assert not await a.hexists(f"{PREFIX}ledger:{ORIGIN}", "holder")


@on_asyncio
async def test_a_dead_holders_origin_comes_back_when_its_lease_expires(redis_server):  # noqa: F811
    delay, lease = 0.1, 0.6
    async with clients(redis_server.url, 2) as (a, b):
        dead = ledger(a, lease)
        await take(dead, delay)  # and never releases: the worker died
        expiry = int(await a.hget(f"{PREFIX}ledger:{ORIGIN}", "lease")) / 1e6
        survivor = ledger(b, lease)
        token = survivor.token()
        assert not (await survivor.acquire(ORIGIN, token, delay, False)).granted
        _, expired = await take(survivor, delay)
        taken_at = await now(b)
        assert expired
        # The dead worker's request counts as ended when its lease expired.
        assert taken_at >= expiry + delay


async def got_429(book: Ledger, delay: float, backoff: float) -> float:
    """One request answered 429: its end, then its worker's hold-off of ``backoff``.
    Returns the end (Redis time)."""
    token, _ = await take(book, delay)
    book.release(ORIGIN, token)
    await book.settled(ORIGIN)
    ended = await now(book.conn)
    book.hold_off(ORIGIN, backoff)
    await book.settled(ORIGIN)
    return ended


@on_asyncio
async def test_a_hold_off_holds_back_every_worker(redis_server):  # noqa: F811
    async with clients(redis_server.url, 2) as (a, b):
        other = ledger(b)
        await got_429(ledger(a), 0.05, 0.4)  # Retry-After: 0.4
        not_before = int(await a.hget(f"{PREFIX}ledger:{ORIGIN}", "nb")) / 1e6
        for delay in (0.0, 0.05):  # with and without a minimum delay
            token, _ = await take(other, delay)
            assert await now(b) >= not_before
            other.release(ORIGIN, token)


@on_asyncio
async def test_a_retry_waits_its_backoff_not_the_delay(redis_server):  # noqa: F811
    delay = 2.0
    async with clients(redis_server.url, 2) as (a, b):
        retrying, other = ledger(a), ledger(b)
        ended = await got_429(retrying, delay, 0.1)
        await take(retrying, delay, retry=True)
        assert 0.1 <= await now(a) - ended < delay
        # Everyone else still waits the delay from the end of the retry.
        assert not (await other.acquire(ORIGIN, other.token(), delay, False)).granted


@on_asyncio
async def test_a_retry_after_another_workers_request_waits_the_delay(redis_server):  # noqa: F811
    delay = 0.3
    async with clients(redis_server.url, 2) as (a, b):
        retrying, other = ledger(a), ledger(b)
        await got_429(retrying, delay, 0.05)
        token, _ = await take(other, 0.0)  # another worker's request, after the backoff
        other.release(ORIGIN, token)
        await other.settled(ORIGIN)
        ended = int(await b.hget(f"{PREFIX}ledger:{ORIGIN}", "end")) / 1e6  # its end, in Redis
        await take(retrying, delay, retry=True)
        assert await now(a) - ended >= delay


def robots_share(conn: redis.asyncio.Redis, lease: float = 30.0) -> SharedRobots:
    return SharedRobots(conn, lambda origin: f"{PREFIX}robots:{origin}", lease)


@on_asyncio
async def test_robots_txt_is_fetched_by_one_worker_and_read_by_the_others(redis_server):  # noqa: F811
    fetched: list[int] = []
    body = b"User-agent: *\nDisallow: /private\n\xff binary tail"

    async with clients(redis_server.url, 3) as conns:

        async def worker(n: int, conn: redis.asyncio.Redis) -> tuple[RobotsFetch, bool]:
            async def fetch() -> RobotsFetch:
                fetched.append(n)
                await asyncio.sleep(0.1)
                return RobotsFetch(status=200, body=body)

            return await robots_share(conn).load(ORIGIN, fetch)

        results = await asyncio.gather(*(worker(n, c) for n, c in enumerate(conns)))
    assert len(fetched) == 1
    assert [here for _, here in results].count(True) == 1
    assert {copy for copy, _ in results} == {RobotsFetch(status=200, body=body)}


@on_asyncio
async def test_robots_txt_of_a_worker_that_died_fetching_is_fetched_again(redis_server):  # noqa: F811
    lease = 0.5
    async with clients(redis_server.url, 2) as (a, b):
        dead = robots_share(a, lease)
        state, _ = await dead.run("claim", ORIGIN, dead.token(), dead.lease)
        assert state == "claimed"  # and then the worker died

        async def fetch() -> RobotsFetch:
            return RobotsFetch(error_kind="timeout")

        started = await now(b)
        copy, here = await robots_share(b, lease).load(ORIGIN, fetch)
        assert (copy, here) == (RobotsFetch(error_kind="timeout"), True)
        assert await now(b) - started >= lease * 0.9


@on_asyncio
async def test_the_robots_warning_goes_to_one_page_of_the_crawl(redis_server):  # noqa: F811
    async with clients(redis_server.url, 3) as conns:
        claims = await asyncio.gather(*(robots_share(c).claim_warning(ORIGIN) for c in conns))
    assert sorted(claims) == [False, False, True]


@on_asyncio
async def test_a_slow_robots_txt_fetch_keeps_its_claim(redis_server):  # noqa: F811
    lease = 0.5
    fetched: list[int] = []

    async with clients(redis_server.url, 2) as conns:

        async def worker(n: int, conn: redis.asyncio.Redis) -> tuple[RobotsFetch, bool]:
            async def fetch() -> RobotsFetch:
                fetched.append(n)
                await asyncio.sleep(3 * lease)  # the fetching worker is alive, only slow
                return RobotsFetch(status=404)

            return await robots_share(conn, lease).load(ORIGIN, fetch)

        results = await asyncio.gather(*(worker(n, c) for n, c in enumerate(conns)))
    assert len(fetched) == 1
    assert [copy for copy, _ in results] == [RobotsFetch(status=404)] * 2


@on_asyncio
async def test_at_delay_0_a_grant_stands_for_a_moment_and_a_hold_off_ends_it(redis_server):  # noqa: F811
    async with clients(redis_server.url, 2) as (a, b):
        mine, other = ledger(a), ledger(b)
        assert not mine.clear(ORIGIN)
        await take(mine, 0.0)
        assert mine.clear(ORIGIN)  # the next requests go without asking Redis
        await asyncio.sleep(CLEARANCE * 1.2)
        assert not mine.clear(ORIGIN)  # then it asks again, and sees other workers' hold-offs
        await take(mine, 0.0)
        other.hold_off(ORIGIN, 1.0)
        await other.settled(ORIGIN)
        assert not (await mine.acquire(ORIGIN, mine.token(), 0.0, False)).granted
        mine.hold_off(ORIGIN, 1.0)  # its own hold-off ends its clearance at once
        assert not mine.clear(ORIGIN)
        await mine.settled(ORIGIN)
