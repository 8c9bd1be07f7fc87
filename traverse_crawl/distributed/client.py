"""The Redis connection of a distributed crawl, and the names of its keys.

``connect`` (and ``connect_sync``, for the ``crawl`` command's checks before the
reactor starts: nothing on the reactor thread may block on Redis) gives a pinged
client from scrapy-redis's ``REDIS_URL`` and ``REDIS_PARAMS``; ``Keys`` names every key
of a crawl; ``Retrying`` carries calls through a short outage. Responses are decoded:
every value kept is text (JSON), never a pickle.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import redis
import redis.asyncio
from redis.exceptions import (
    AuthenticationError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.table import SettingsLike
from traverse_crawl.errors import ConfigError
from traverse_crawl.utils.redact import redact_text, redact_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

# redis-py's connection arguments unless REDIS_PARAMS says otherwise: a paused
# or lost server is noticed within seconds, and the retry loop takes over.
DEFAULT_PARAMS: dict[str, Any] = {"socket_timeout": 10.0, "socket_connect_timeout": 5.0}
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)


class RedisLost(Exception):
    """Redis stayed unreachable for ``TRAVERSE_REDIS_RETRY`` seconds during a crawl."""


class CrawlVanished(RedisLost):
    """Redis answers, but without the crawl's state (restarted empty, flushed, evicted)."""


async def claim_identity(conn: redis.asyncio.Redis, keys: Keys) -> str:
    """The crawl's identity token: set now if the crawl has none (the first worker), else
    the one set at its start. One transaction, so two workers never set two tokens."""
    async with conn.pipeline(transaction=True) as pipe:
        pipe.set(keys.identity, uuid.uuid4().hex, nx=True)
        pipe.get(keys.identity)
        _, token = await pipe.execute()
    return str(token)


async def check_identity(conn: redis.asyncio.Redis, keys: Keys, token: str, url: str) -> None:
    """``CrawlVanished`` when the crawl's identity token is not ``token`` any more."""
    found = await conn.get(keys.identity)
    if found != token:
        raise CrawlVanished(
            f"REDIS_URL: the state of crawl {keys.crawl_id!r} vanished from Redis at "
            f"{redact_url(url)} (restarted without persistence, flushed or evicted?); "
            "what this crawl recorded there is lost, and its manifests are not written: "
            "start it again (a new TRAVERSE_CRAWL_ID, or its keys deleted), and keep "
            "Redis's data (AOF or RDB, maxmemory-policy noeviction)"
        )


def redis_config(settings: SettingsLike | RedisConfig) -> RedisConfig:
    return settings if isinstance(settings, RedisConfig) else RedisConfig.from_settings(settings)


def _params(config: RedisConfig) -> dict[str, Any]:
    params = {**DEFAULT_PARAMS, **config.params, "decode_responses": True}
    params.pop("redis_cls", None)  # scrapy-redis's own key: the client class is ours
    return params


def client(settings: SettingsLike | RedisConfig) -> redis.asyncio.Redis:
    """An asyncio client (not connected yet); ``ConfigError`` for a bad ``REDIS_PARAMS``."""
    config = redis_config(settings)
    try:
        return redis.asyncio.Redis.from_url(config.url, **_params(config))
    except (TypeError, ValueError) as exc:
        raise ConfigError("REDIS_PARAMS", f"not accepted by redis-py: {exc}") from None


# What a crawl's own data in Redis can raise when something else was written there.
DATA_ERRORS = (ValueError, TypeError, KeyError, IndexError, AttributeError)
REFUSED_WRITES = (OutOfMemoryError, ReadOnlyError, NoPermissionError)


def service_error(
    config: RedisConfig, exc: BaseException, crawl_id: str | None = None
) -> ConfigError:
    """One line naming ``REDIS_URL`` for a Redis that cannot serve the crawl: unreachable,
    refusing the password, refusing writes (full), or holding other data under the crawl's
    keys (``crawl_id``, default ``TRAVERSE_CRAWL_ID``). The password is masked."""
    url = redact_url(config.url)
    reason = redact_text((str(exc) or type(exc).__name__).split(" script: ")[0].rstrip(". "))
    if isinstance(exc, AuthenticationError) or reason.startswith(("NOAUTH", "WRONGPASS")):
        return ConfigError(
            "REDIS_URL", f"authentication failed at {url}: {reason}; check the password in "
            "REDIS_URL (redis://:PASSWORD@host:port/db) or REDIS_PARAMS"
        )  # fmt: skip
    if isinstance(exc, REFUSED_WRITES):
        code = {OutOfMemoryError: "OOM", ReadOnlyError: "READONLY", NoPermissionError: "NOPERM"}
        why = code.get(type(exc), type(exc).__name__)
        hint = (
            " (maxmemory is reached and its maxmemory-policy evicts nothing: give Redis more "
            "memory, or delete old crawls' keys)" if why == "OOM" else ""
        )  # fmt: skip
        return ConfigError("REDIS_URL", f"Redis at {url} refuses the crawl's writes: {why} "
                                        f"{reason}{hint}")  # fmt: skip
    if isinstance(exc, (ResponseError, *DATA_ERRORS)):
        crawl = crawl_id or config.crawl_id
        return ConfigError(
            "REDIS_URL", f"crawl {crawl!r} in Redis at {url} holds data that is not a "
            f"traverse_crawl crawl's ({reason}); give another TRAVERSE_CRAWL_ID, or delete "
            f"the keys traverse:{crawl}:*"
        )  # fmt: skip
    return ConfigError("REDIS_URL", f"cannot reach Redis at {url}: {reason}")


async def connect(settings: SettingsLike | RedisConfig) -> redis.asyncio.Redis:
    """A client whose server answered PING; ``ConfigError`` naming ``REDIS_URL`` if none."""
    config = redis_config(settings)
    conn = client(config)
    try:
        await conn.ping()
    except (*UNREACHABLE, redis.exceptions.RedisError) as exc:
        await conn.aclose()
        raise service_error(config, exc) from None
    return conn


def connect_sync(settings: SettingsLike | RedisConfig) -> redis.Redis:
    """``connect`` for code that runs before the reactor (blocking is fine there)."""
    config = redis_config(settings)
    try:
        conn = redis.Redis.from_url(config.url, **_params(config))
    except (TypeError, ValueError) as exc:
        raise ConfigError("REDIS_PARAMS", f"not accepted by redis-py: {exc}") from None
    try:
        conn.ping()
    except (*UNREACHABLE, redis.exceptions.RedisError) as exc:
        conn.close()
        raise service_error(config, exc) from None
    return conn


class Keys:
    """The names of a crawl's keys; all start with ``traverse:<crawl id>:``.

    Crawl-wide: ``config`` (JSON: the crawl-defining settings, set by the first
    worker), ``seeds`` (hash: seed id → seed number), ``seedlist`` (list: seed
    JSON by number), ``ready`` (sorted set: tasks to take), ``leases`` (sorted
    set: taken tasks → expiry, Redis time in ms), ``tokens`` (hash: task →
    lease token), ``counter`` (lease tokens), ``workers`` (sorted set: worker →
    last heartbeat), ``written`` (count of manifests written), ``identity`` (a random
    token the crawl's first worker sets: gone or another, the crawl's state vanished
    from Redis). Per seed number
    ``n``: ``seed(n, part)`` for its ``state`` (hash), ``queue`` (list of
    ``[url, depth, parent]``), ``seen`` and ``overflow`` (sets), ``pending``
    (hash: index → links not yet committed), ``records`` (hash: index → page
    record). Per origin (the politeness ledger, robots.txt): ``origin(kind, origin)``.
    """

    def __init__(self, crawl_id: str) -> None:
        self.crawl_id = crawl_id
        self.prefix = f"traverse:{crawl_id}:"
        self.config = self.key("config")
        self.seeds = self.key("seeds")
        self.seedlist = self.key("seedlist")
        self.ready = self.key("ready")
        self.leases = self.key("leases")
        self.tokens = self.key("tokens")
        self.counter = self.key("counter")
        self.workers = self.key("workers")
        self.written = self.key("written")
        self.identity = self.key("identity")
        self.pattern = self.prefix + "*"  # every key of the crawl (SCAN MATCH)

    def key(self, *parts: object) -> str:
        """``traverse:<crawl id>:part:part...``: a key of this crawl."""
        return self.prefix + ":".join(str(part) for part in parts)

    def seed(self, number: int, part: str) -> str:
        return self.key("seed", number, part)

    def origin(self, kind: str, origin: str) -> str:
        """A per-origin key (``ledger``, ``robots``, ``backoff``, ...)."""
        return self.key(kind, origin)


class Retrying:
    """Calls that survive a short Redis outage (docs/distributed.md, "What happens on each fault").

    ``await retrying(fn, *args)`` awaits ``fn(*args)``; while Redis is unreachable it tries
    again with exponential backoff (0.1 s doubling to 2 s), for up to
    ``TRAVERSE_REDIS_RETRY`` seconds counted from the first failure, then
    raises ``RedisLost`` with a message naming ``REDIS_URL``.
    """

    def __init__(self, config: RedisConfig) -> None:
        self.config = config

    async def __call__(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        started: float | None = None
        wait = 0.1
        while True:
            try:
                return await fn(*args)
            except UNREACHABLE as exc:
                now = time.monotonic()
                if started is None:
                    started = now
                    logger.warning(
                        "Redis at %s unreachable (%s); retrying for up to %.0f s "
                        "(TRAVERSE_REDIS_RETRY)",
                        redact_url(self.config.url), exc, self.config.redis_retry,
                    )  # fmt: skip
                if now - started >= self.config.redis_retry:
                    raise RedisLost(
                        f"REDIS_URL: lost Redis at {redact_url(self.config.url)} for "
                        f"{now - started:.0f} s (TRAVERSE_REDIS_RETRY={self.config.redis_retry:g}):"
                        f" {exc}; the crawl's state in Redis is kept, start workers again "
                        "to go on"
                    ) from None
                await asyncio.sleep(min(wait, max(0.0, started + self.config.redis_retry - now)))
                wait = min(wait * 2, 2.0)
