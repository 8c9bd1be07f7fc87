"""robots.txt fetched once per origin per crawl, shared by every worker.

One hash per origin, ``traverse:<crawl id>:robots:<origin>``: the first worker that
needs the origin's rules claims the fetch in a Lua script (one atomic step across
machines, or two workers would both fetch), fetches robots.txt and stores what came
back; every other worker waits for that copy and parses it itself
(docs/distributed.md, "Politeness across workers").
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, ClassVar

from traverse_crawl.distributed.ledger import (
    REDIS_NOW,
    RENEW,
    OriginState,
)
from traverse_crawl.politeness.robots import RobotsFetch

if TYPE_CHECKING:
    pass

# The hash: ``state`` (``loading`` with a ``token`` and a ``lease`` of
# TRAVERSE_LEASE_TIMEOUT, renewed while the claimant fetches; then ``done``), ``fetch``
# (status, body, error kind, as JSON) and ``warned`` (the fail-open / rfc9309 warning
# went to one page of the whole crawl, as in a single process). A worker that dies
# while fetching lets its claim expire, and the next one to ask fetches.
#
# KEYS[1] robots hash; ARGV token, lease (µs). Returns {"done", fetch JSON},
# {"wait", µs until the fetcher's claim expires} or {"claimed", ""}.
CLAIM = (
    REDIS_NOW
    + """
local v = redis.call('HMGET', KEYS[1], 'state', 'lease', 'fetch')
if v[1] == 'done' then return {'done', v[3]} end
if v[1] == 'loading' and (tonumber(v[2]) or 0) > now then
  return {'wait', tostring(tonumber(v[2]) - now)}
end
redis.call('HSET', KEYS[1], 'state', 'loading', 'token', ARGV[1],
           'lease', string.format('%.0f', now + tonumber(ARGV[2])))
return {'claimed', ''}
"""
)

# KEYS[1]; ARGV fetch JSON. The first stored copy wins; returns the copy kept.
STORE = """
if redis.call('HGET', KEYS[1], 'state') == 'done' then
  return redis.call('HGET', KEYS[1], 'fetch')
end
redis.call('HSET', KEYS[1], 'state', 'done', 'fetch', ARGV[1])
redis.call('HDEL', KEYS[1], 'token', 'lease')
return ARGV[1]
"""

# KEYS[1]; ARGV token. A fetch that did not finish (cancelled): give the claim back.
UNCLAIM = """
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] and
   redis.call('HGET', KEYS[1], 'state') == 'loading' then
  redis.call('HDEL', KEYS[1], 'state', 'token', 'lease')
end
return 1
"""

_POLL_FIRST = 0.02  # seconds; doubling to _POLL_MAX while another worker fetches
_POLL_MAX = 0.5


def encode(fetch: RobotsFetch) -> str:
    body = base64.b64encode(fetch.body).decode("ascii")
    return json.dumps({"status": fetch.status, "body": body, "error": fetch.error_kind})


def decode(text: str) -> RobotsFetch:
    data = json.loads(text)
    return RobotsFetch(
        status=data["status"], body=base64.b64decode(data["body"]), error_kind=data["error"]
    )


class SharedRobots(OriginState):
    """The crawl's robots.txt copies, as seen from one worker."""

    SCRIPTS: ClassVar[dict[str, str]] = {
        "claim": CLAIM,
        "store": STORE,
        "unclaim": UNCLAIM,
        "renew": RENEW,
    }

    async def load(
        self, origin: str, fetch: Callable[[], Awaitable[RobotsFetch]]
    ) -> tuple[RobotsFetch, bool]:
        """The origin's robots.txt: ``(copy, True)`` when this worker fetched it
        (by awaiting ``fetch()``), ``(copy, False)`` when another one had."""
        token = self.token()
        poll = _POLL_FIRST
        while True:
            state, value = await self.run("claim", origin, token, self.lease)
            if state == "done":
                return decode(value), False
            if state == "claimed":
                break
            # Another worker is fetching: look again soon, or when its claim expires.
            await asyncio.sleep(min(poll, int(value) / 1_000_000 + 0.001))
            poll = min(poll * 2, _POLL_MAX)
        renewing = asyncio.ensure_future(self._renew(origin, token))
        try:
            fetched = await fetch()
        except BaseException:
            await asyncio.shield(self.run("unclaim", origin, token))
            raise
        finally:
            renewing.cancel()
        stored = await self.run("store", origin, encode(fetched))
        return decode(stored), True

    async def _renew(self, origin: str, token: str) -> None:
        """Keep the claim while the fetch runs (a slow robots.txt is not a dead worker)."""
        while True:
            await asyncio.sleep(self.lease_timeout / 3)
            await self.run("renew", origin, token, self.lease, "token")

    async def claim_warning(self, origin: str) -> bool:
        """Whether this worker's page is the first of the crawl to get the
        origin's robots warning (exactly one page does)."""
        key = self.key(origin)
        return bool(await self.call(lambda: self.conn.hsetnx(key, "warned", "1")))
