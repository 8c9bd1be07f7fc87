"""The Redis connection of a distributed crawl: settings, key names, start-up refusals."""

from __future__ import annotations

import pytest

from tests.support.distributed_helpers import run_async
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.scrapyd_harness import free_port
from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.distributed.client import (
    Keys,
    RedisLost,
    Retrying,
    client,
    connect,
    connect_sync,
)
from traverse_crawl.errors import ConfigError
from traverse_crawl.utils.redact import redact_url


def test_settings_defaults_and_refusals() -> None:
    config = TraverseConfig.from_settings({}).redis
    assert not config.enabled
    assert (config.crawl_id, config.idle_timeout, config.lease_timeout) == ("traverse", 60, 60)
    assert config.redis_retry == 30
    parsed = RedisConfig.from_settings(
        {"REDIS_URL": "redis://127.0.0.1:1/0", "REDIS_PARAMS": '{"socket_timeout": 2}'}
    )
    assert parsed.enabled and parsed.params == {"socket_timeout": 2}
    for settings, name in (
        ({"REDIS_URL": "http://x"}, "REDIS_URL"),
        ({"REDIS_PARAMS": "[1]"}, "REDIS_PARAMS"),
        ({"TRAVERSE_CRAWL_ID": "a b"}, "TRAVERSE_CRAWL_ID"),
        ({"TRAVERSE_CRAWL_ID": ""}, "TRAVERSE_CRAWL_ID"),
        ({"TRAVERSE_LEASE_TIMEOUT": "0.1"}, "TRAVERSE_LEASE_TIMEOUT"),
        ({"TRAVERSE_IDLE_TIMEOUT": "-1"}, "TRAVERSE_IDLE_TIMEOUT"),
        ({"TRAVERSE_REDIS_RETRY": "x"}, "TRAVERSE_REDIS_RETRY"),
        ({"REDIS_URL": "redis://h/0", "JOBDIR": "/tmp/j"}, "JOBDIR/REDIS_URL"),
    ):
        with pytest.raises(ConfigError) as info:
            TraverseConfig.from_settings(settings)
        assert info.value.name == name


def test_keys_all_under_the_crawl_prefix() -> None:
    keys = Keys("shop-2026")
    names = [keys.config, keys.seeds, keys.seedlist, keys.ready, keys.leases, keys.tokens]
    names += [keys.counter, keys.workers, keys.written, keys.seed(3, "queue")]
    names += [keys.origin("ledger", "http://a:1")]
    assert all(name.startswith("traverse:shop-2026:") for name in names)
    assert len(set(names)) == len(names)
    assert keys.seed(3, "queue") == "traverse:shop-2026:seed:3:queue"


def test_password_never_shown() -> None:
    assert redact_url("redis://:s3cret@h:1/0") == "redis://:***@h:1/0"
    assert redact_url("redis://u:s3cret@h:1/0") == "redis://u:***@h:1/0"
    assert redact_url("redis://h:1/0") == "redis://h:1/0"


@pytest.mark.redis
def test_connect_to_a_real_server(redis_server: RedisServer) -> None:  # noqa: F811
    async def run() -> str:
        conn = await connect({"REDIS_URL": redis_server.url})
        await conn.set(Keys("t").key("probe"), "v")
        value = await conn.get("traverse:t:probe")
        await conn.aclose()
        return str(value)

    assert run_async(run()) == "v"
    connect_sync({"REDIS_URL": redis_server.url}).close()


def test_unreachable_names_redis_url() -> None:
    url = f"redis://:pw@127.0.0.1:{free_port()}/0"
    with pytest.raises(ConfigError) as info:
        run_async(connect({"REDIS_URL": url}))
    assert info.value.name == "REDIS_URL" and "pw" not in str(info.value)
    with pytest.raises(ConfigError, match=r"^REDIS_URL: cannot reach Redis"):
        connect_sync({"REDIS_URL": url})


def test_retrying_gives_up_naming_redis_url() -> None:
    config = RedisConfig.from_settings(
        {"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "TRAVERSE_REDIS_RETRY": "0.5"}
    )

    async def run() -> None:
        redis = client(config)
        try:
            await Retrying(config)(redis.ping)
        finally:
            await redis.aclose()

    with pytest.raises(RedisLost, match=r"^REDIS_URL: lost Redis"):
        run_async(run())
