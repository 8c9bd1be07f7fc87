"""The per-origin politeness ledger of a distributed crawl, kept in Redis.

One hash per origin, ``traverse:<crawl id>:ledger:<origin>``, that every worker of the
crawl consults before it sends a request there, through Lua scripts: the check and
the claim must be one atomic step for all workers on all machines. Every time is
Redis's clock, never a worker's (docs/distributed.md, "Politeness across workers").
Nothing here blocks: every call is a coroutine of the asyncio Redis client.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from traverse_crawl.politeness.backoff import FLOOR

if TYPE_CHECKING:
    import redis.asyncio

logger = logging.getLogger(__name__)

Call = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]

# The hash's fields:
# - ``holder``/``lease``: the worker's token that holds the origin (one request in
#   flight while the origin's delay is > 0) and when that hold expires; a worker that
#   dies holding an origin never releases it, so its hold expires TRAVERSE_LEASE_TIMEOUT
#   after it was taken or last renewed (a live worker renews a long download's hold
#   every third of the lease), and its request counts as ended then;
# - ``end``: when the last request to the origin ended;
# - ``nb``: "not before": no request starts earlier (a retry's backoff or a
#   Retry-After, written by the worker that got the 429/5xx), and ``nbe``, the end of
#   the failed attempt it follows: the retry waits its backoff instead of the delay
#   after that attempt, but the delay after any later request;
# - ``bo`` and ``pace``: the origin's back-off and TRAVERSE_DELAY_FACTOR's pace, one value
#   for every worker (politeness/backoff.py has the rules these scripts follow);
# - ``run`` and ``gone``: the origin's block pages in a row, whichever workers got them, and
#   the run that gave the origin up (TRAVERSE_BLOCK_STOP_AFTER).
# Times are Redis's ``TIME`` in microseconds: workers on different machines disagree
# about the time, but they all talk to one Redis; a worker only ever turns a duration
# that Redis gave it into a local sleep.
REDIS_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
"""

# KEYS[1] ledger; ARGV token, delay (µs), lease (µs), retry ("1": the attempt
# waits its backoff, not the delay), cap (µs, TRAVERSE_MAX_DELAY). Returns {granted,
# wait µs, expired, delay µs, back-off µs, block pages in a row, given up at}:
# granted 1: the caller may send now (and holds the origin while the delay is > 0);
# granted 0: ask again after ``wait``.
# ``expired`` 1: a dead holder's lease ran out. The delay is the worker's, or the
# origin's back-off or pace when longer (never above the cap, unless the worker's is).
ACQUIRE = (
    REDIS_NOW
    + """
local v = redis.call('HMGET', KEYS[1], 'holder', 'lease', 'end', 'nb', 'nbe', 'bo', 'pace',
                     'run', 'gone')
local bo = tonumber(v[6]) or 0
local run, gone = tonumber(v[8]) or 0, tonumber(v[9]) or 0
local delay = math.max(tonumber(ARGV[2]),
                       math.min(tonumber(ARGV[5]), math.max(bo, tonumber(v[7]) or 0)))
local last_end = tonumber(v[3]) or 0
local expired = 0
if v[1] then
  local lease = tonumber(v[2]) or 0
  if lease > now then
    -- In flight elsewhere: ask again after this worker's own delay, or at most 0.25 s
    -- while the origin's back-off is longer: a success may halve it by the end.
    local again = math.max(tonumber(ARGV[2]), math.min(delay, 250000), 1000)
    return {0, again, 0, delay, bo, run, gone}
  end
  expired = 1
  if lease > last_end then last_end = lease end
  redis.call('HDEL', KEYS[1], 'holder', 'lease')
  redis.call('HSET', KEYS[1], 'end', string.format('%.0f', last_end))
end
local ready = tonumber(v[4]) or 0
-- A retry skips the delay after its own failed attempt only (nbe: the end
-- that the hold-off followed); a request of another worker since then counts.
local skip = ARGV[4] == '1' and last_end <= (tonumber(v[5]) or 0)
if not skip and delay > 0 and last_end + delay > ready then
  ready = last_end + delay
end
if ready > now then return {0, ready - now, expired, delay, bo, run, gone} end
if delay > 0 then
  redis.call('HSET', KEYS[1], 'holder', ARGV[1],
             'lease', string.format('%.0f', now + tonumber(ARGV[3])))
end
return {1, 0, expired, delay, bo, run, gone}
"""
)

# KEYS[1] ledger; ARGV Retry-After (µs, -1 for none), cap (µs), floor (µs). A 429,
# a 503 or a block page: the back-off doubles (at least the floor, at most the cap),
# or is the Retry-After when that is within the cap. Returns the new back-off.
PUSH_BACK = """
local bo = tonumber(redis.call('HGET', KEYS[1], 'bo')) or 0
local ra, cap = tonumber(ARGV[1]), tonumber(ARGV[2])
if ra >= 0 and ra <= cap then
  bo = ra
else
  bo = math.min(cap, math.max(tonumber(ARGV[3]), 2 * bo))
end
redis.call('HSET', KEYS[1], 'bo', string.format('%.0f', bo))
return bo
"""

# KEYS[1] ledger; ARGV stop after (TRAVERSE_BLOCK_STOP_AFTER). One more page recorded
# blocked: its run grows, and gives the origin up when it reaches the stop. Returns
# {run, given up at (0: not given up)}.
BLOCKED_PAGE = """
local run = redis.call('HINCRBY', KEYS[1], 'run', 1)
local gone = tonumber(redis.call('HGET', KEYS[1], 'gone')) or 0
local stop = tonumber(ARGV[1])
if gone == 0 and stop > 0 and run >= stop then
  gone = run
  redis.call('HSET', KEYS[1], 'gone', gone)
end
return {run, gone}
"""

# KEYS[1] ledger. A response that is not a block page ends the origin's run.
RUN_ENDED = """
redis.call('HSET', KEYS[1], 'run', 0)
return 1
"""

# KEYS[1] ledger; ARGV pace (µs), floor (µs), halve ("1": a successful response).
# Another response: the pace is its own; a success halves the back-off, dropped
# under the floor.
ANSWERED = """
if ARGV[3] == '1' then
  local bo = (tonumber(redis.call('HGET', KEYS[1], 'bo')) or 0) / 2
  if bo < tonumber(ARGV[2]) then bo = 0 end
  redis.call('HSET', KEYS[1], 'bo', string.format('%.0f', bo))
end
redis.call('HSET', KEYS[1], 'pace', ARGV[1])
return 1
"""

# KEYS[1] ledger; ARGV token. The download ended now: the delay runs from here,
# even when the hold had expired and another worker holds the origin.
RELEASE = (
    REDIS_NOW
    + """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'holder', 'lease')
end
local last_end = tonumber(redis.call('HGET', KEYS[1], 'end')) or 0
if now > last_end then
  redis.call('HSET', KEYS[1], 'end', string.format('%.0f', now))
end
return 1
"""
)

# KEYS[1] ledger (or robots hash); ARGV token, lease (µs), the field that names
# the holder. A long download (or robots.txt fetch) keeps its hold.
RENEW = (
    REDIS_NOW
    + """
if redis.call('HGET', KEYS[1], ARGV[3]) == ARGV[1] then
  redis.call('HSET', KEYS[1], 'lease', string.format('%.0f', now + tonumber(ARGV[2])))
end
return 1
"""
)

# KEYS[1] ledger; ARGV seconds to hold off (µs). No request starts before then.
HOLD_OFF = (
    REDIS_NOW
    + """
local nb = now + tonumber(ARGV[1])
if nb > (tonumber(redis.call('HGET', KEYS[1], 'nb')) or 0) then
  redis.call('HSET', KEYS[1], 'nb', string.format('%.0f', nb),
             'nbe', redis.call('HGET', KEYS[1], 'end') or '0')
end
return 1
"""
)


# Seconds that a grant at delay 0 stands for the origin's later requests in this
# worker. At delay 0 the ledger only holds "not before" times (a retry's backoff,
# a Retry-After), and asking Redis before every request cost the worker one
# script call per page; another worker's hold-off now reaches
# this worker within this time, as if its requests had been sent just before it.
CLEARANCE = 0.25


class Grant(NamedTuple):
    granted: bool
    wait: float  # seconds to wait before asking again (0 when granted)
    expired: bool  # the previous holder's lease had run out
    delay: float = 0.0  # the origin's delay, its back-off or pace included
    backoff: float = 0.0  # the origin's back-off, as every worker sees it
    run: int = 0  # the origin's block pages in a row
    gone: int = 0  # > 0: the run that gave the origin up


def micros(seconds: float) -> int:
    return max(0, round(seconds * 1_000_000))


def worker_name() -> str:
    """This process, for tokens: host, pid and a random part (pids are reused)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


async def direct(fn: Callable[[], Awaitable[Any]]) -> Any:
    return await fn()


class OriginState:
    """Per-origin hashes of one crawl in Redis, as seen from one worker: the
    scripts that change them, run through ``call`` (retries while Redis is away)."""

    SCRIPTS: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        conn: redis.asyncio.Redis,
        key: Callable[[str], str],
        lease_timeout: float,
        call: Call = direct,
    ) -> None:
        self.conn = conn
        self.key = key  # origin → its hash
        self.lease_timeout = lease_timeout
        self.lease = micros(lease_timeout)
        self.call = call
        self.name = worker_name()
        self._tokens = itertools.count(1)
        self.scripts = {name: conn.register_script(lua) for name, lua in self.SCRIPTS.items()}

    def token(self) -> str:
        """A token no other holder has: this worker's name and a counter."""
        return f"{self.name}:{next(self._tokens)}"

    def script(self, name: str, origin: str, *args: str | int) -> Callable[[], Awaitable[Any]]:
        """A call of the script ``name`` on ``origin``'s hash, to await (through ``call``)."""
        return lambda: self.scripts[name](keys=[self.key(origin)], args=list(args))

    async def run(self, name: str, origin: str, *args: str | int) -> Any:
        return await self.call(self.script(name, origin, *args))


class Ledger(OriginState):
    """The politeness ledger of one crawl, as seen from one worker."""

    SCRIPTS: ClassVar[dict[str, str]] = {
        "acquire": ACQUIRE,
        "release": RELEASE,
        "hold_off": HOLD_OFF,
        "renew": RENEW,
        "push_back": PUSH_BACK,
        "answered": ANSWERED,
        "blocked_page": BLOCKED_PAGE,
        "run_ended": RUN_ENDED,
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._clear: dict[str, float] = {}  # origin -> until when a delay-0 grant stands

    async def acquire(
        self, origin: str, token: str, delay: float, retry: bool, cap: float = 0.0
    ) -> Grant:
        """Take the origin for one request if the ledger allows it now."""
        args = (token, micros(delay), self.lease, "1" if retry else "0", micros(cap))
        granted, wait, expired, shared, backoff, run, gone = await self.run(
            "acquire", origin, *args
        )
        grant = Grant(
            bool(int(granted)),
            int(wait) / 1_000_000,
            bool(int(expired)),
            int(shared) / 1_000_000,
            int(backoff) / 1_000_000,
            int(run),
            int(gone),
        )
        if grant.granted and not grant.delay:
            self._clear[origin] = asyncio.get_running_loop().time() + CLEARANCE
        return grant

    def clear(self, origin: str) -> bool:
        """At delay 0: may this worker send to ``origin`` without asking (``CLEARANCE``)?"""
        until = self._clear.get(origin)
        if until is None:
            return False
        if asyncio.get_running_loop().time() < until:
            return True
        del self._clear[origin]
        return False

    def release(self, origin: str, token: str) -> None:
        """The request sent under ``token`` ended (sent in order, not awaited)."""
        self._then(origin, self.script("release", origin, token))

    def renew(self, origin: str, token: str) -> None:
        """The request sent under ``token`` is still downloading (not awaited)."""
        self._then(origin, self.script("renew", origin, token, self.lease, "holder"))

    def hold_off(self, origin: str, seconds: float) -> None:
        """No worker sends to ``origin`` for ``seconds`` from now (not awaited)."""
        self._clear.pop(origin, None)
        self._then(origin, self.script("hold_off", origin, micros(seconds)))

    def push_back(self, origin: str, retry_after: float | None, cap: float) -> None:
        """A 429, a 503 or a block page from ``origin`` (not awaited)."""
        self._clear.pop(origin, None)
        ra = -1 if retry_after is None else micros(retry_after)
        self._then(origin, self.script("push_back", origin, ra, micros(cap), micros(FLOOR)))

    def answered(self, origin: str, pace: float, success: bool) -> None:
        """Another response from ``origin``: its pace, and a success halves the back-off."""
        args = (micros(pace), micros(FLOOR), "1" if success else "0")
        self._then(origin, self.script("answered", origin, *args))

    def page_blocked(self, origin: str, stop_after: int, then: Callable[[int, int], None]) -> None:
        """A page of ``origin`` recorded blocked (not awaited); ``then(run, gone)``."""
        call = self.script("blocked_page", origin, stop_after)

        async def step() -> Any:
            run, gone = await call()
            then(int(run), int(gone))

        self._then(origin, step)

    def run_ended(self, origin: str) -> None:
        """A response of ``origin`` that is not a block page (not awaited)."""
        self._then(origin, self.script("run_ended", origin))

    async def settled(self, origin: str) -> None:
        """Until this worker's earlier writes for ``origin`` are in Redis.

        A worker's own writes to one origin (the release after a download, a retry's
        hold-off) are sent in order and are in Redis before it asks for the origin
        again, so a worker never races itself.
        """
        pending = self._pending.get(origin)
        if pending is not None:
            await asyncio.wait([pending])

    async def drain(self) -> None:
        """Until every write this worker sent is in Redis (before closing)."""
        if self._pending:
            await asyncio.wait(list(self._pending.values()))

    def _then(self, origin: str, fn: Callable[[], Awaitable[Any]]) -> None:
        previous = self._pending.get(origin)

        async def run() -> None:
            if previous is not None:
                await asyncio.wait([previous])
            await self.call(fn)

        task = asyncio.ensure_future(run())
        self._pending[origin] = task

        def done(task: asyncio.Future[Any]) -> None:
            if self._pending.get(origin) is task:
                del self._pending[origin]
            if not task.cancelled() and task.exception() is not None:
                # The hold, if any, expires with its lease; the crawl goes on.
                logger.error("politeness ledger write for %s failed: %s", origin, task.exception())

        task.add_done_callback(done)
