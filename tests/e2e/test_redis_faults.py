"""A Redis that answers but cannot serve the crawl: full, password-protected, or holding
other data under the crawl's keys. One line naming ``REDIS_URL`` each, never a traceback:
exit 2 at start (nothing was requested), 1 once the crawl ran (docs/distributed.md, "What happens on
each fault")."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.redisserver import RedisServer
from tests.support.server import Reply

pytestmark = pytest.mark.redis


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[RedisServer]]:
    servers: list[RedisServer] = []
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


def server_with(started: list[RedisServer], tmp_path: Path, *extra: str) -> RedisServer:
    server = RedisServer(tmp_path / f"redis{len(started)}", None, *extra)
    server.start()
    started.append(server)
    return server


def crawl(tmp_path: Path, site, url: str) -> list[str]:
    return [
        "crawl", "traverse", "-a", f"url={site.url('/')}", *crawl_args(tmp_path, site.origin),
        "-s", f"REDIS_URL={url}", "-s", "TRAVERSE_IDLE_TIMEOUT=2",
    ]  # fmt: skip


def one_error(stderr: str, expected: str) -> None:
    errors = [line for line in stderr.splitlines() if "ERROR" in line or "error:" in line]
    assert len(errors) == 1 and expected in errors[0], stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]


def test_a_full_redis_at_start_is_exit_2_naming_redis_url(server, started, tmp_path):
    server.site({"/": "home"})
    full = server_with(started, tmp_path, "--maxmemory-policy", "noeviction")
    conn = redis.Redis(port=full.port)
    conn.eval("for i=1,20000 do redis.call('SET','fill:'..i,string.rep('x',100)) end", 0)
    conn.config_set("maxmemory", "1mb")
    conn.close()
    result = scrapy(*crawl(tmp_path, server, full.url))
    assert result.returncode == 2, result.stderr[-3000:]
    one_error(result.stderr, f"REDIS_URL: Redis at {full.url} refuses the crawl's writes: OOM")
    assert "maxmemory" in result.stderr
    assert server.hits == []


def test_a_wrong_password_is_authentication_failed_not_cannot_reach(server, started, tmp_path):
    server.site({"/": "home"})
    guarded = server_with(started, tmp_path, "--requirepass", "s3cret-pw")
    for url in (
        f"redis://:wrong-pw@127.0.0.1:{guarded.port}/0",
        f"redis://127.0.0.1:{guarded.port}/0",
    ):
        shown = url.replace(":wrong-pw@", ":***@")
        result = scrapy(*crawl(tmp_path, server, url))
        assert result.returncode == 2, result.stderr[-3000:]
        one_error(result.stderr, f"REDIS_URL: authentication failed at {shown}")
        assert "cannot reach" not in result.stderr and "wrong-pw" not in result.stderr
        status = scrapy("crawlstatus", "-s", f"REDIS_URL={url}")
        assert status.returncode == 1
        assert status.stderr.startswith(f"error: REDIS_URL: authentication failed at {shown}")
        assert "wrong-pw" not in status.stderr and len(status.stderr.splitlines()) == 1
    assert server.hits == []


@pytest.mark.parametrize(
    ("key", "garbage"),
    [
        ("config", ("hset", "x", "y")),  # another type
        ("config", ("set", "not json {")),
        ("config", ("set", '"a JSON string"')),
    ],
)
def test_garbage_under_the_crawls_keys_at_start(server, started, tmp_path, key, garbage):
    server.site({"/": "home"})
    plain = server_with(started, tmp_path)
    conn = redis.Redis(port=plain.port)
    getattr(conn, garbage[0])(f"traverse:traverse:{key}", *garbage[1:])
    conn.close()
    result = scrapy(*crawl(tmp_path, server, plain.url))
    assert result.returncode == 2, result.stderr[-3000:]
    one_error(result.stderr, f"REDIS_URL: crawl 'traverse' in Redis at {plain.url} ")
    assert server.hits == []
    status = scrapy("crawlstatus", "-s", f"REDIS_URL={plain.url}")
    assert status.returncode == 1, status.stderr
    assert status.stderr.startswith(f"error: REDIS_URL: crawl 'traverse' in Redis at {plain.url}")
    assert len(status.stderr.splitlines()) == 1, status.stderr


def test_crawlstatus_on_garbage_seeds_is_one_line(server, started, tmp_path):
    server.site({"/": "home"})
    plain = server_with(started, tmp_path)
    done = scrapy(*crawl(tmp_path, server, plain.url))
    assert done.returncode == 0, done.stderr[-3000:]
    conn = redis.Redis(port=plain.port)
    for damage in (
        lambda: conn.rpush("traverse:traverse:seedlist", "not json"),
        lambda: conn.hset("traverse:traverse:seed:0:state", "committed", "many"),
        lambda: conn.zadd("traverse:traverse:leases", {"x:y": 1}),
    ):
        damage()
        status = scrapy("crawlstatus", "-s", f"REDIS_URL={plain.url}")
        assert status.returncode == 1, status.stderr
        assert status.stderr.startswith(
            f"error: REDIS_URL: crawl 'traverse' in Redis at {plain.url} holds data"
        ), status.stderr
        assert len(status.stderr.splitlines()) == 1, status.stderr
    conn.close()


def test_garbage_tasks_mid_crawl_stop_the_worker_with_exit_1(server, started, tmp_path):
    server.site({"/": '<a href="/a">a</a>', "/a": "a"})
    plain = server_with(started, tmp_path)
    conn = redis.Redis(port=plain.port)
    conn.zadd("traverse:traverse:ready", {"0:7": -5, "zzz": -6})  # before any real task
    conn.close()
    result = scrapy(*crawl(tmp_path, server, plain.url))
    assert result.returncode == 1, result.stderr[-3000:]
    named = [line for line in result.stderr.splitlines() if "REDIS_URL" in line]
    assert len(named) == 1, result.stderr[-3000:]
    assert f"ERROR: REDIS_URL: crawl 'traverse' in Redis at {plain.url} holds data" in named[0]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]


@pytest.mark.parametrize("task", ["7:0", "7:m"])  # a page of seed 7, its manifest
def test_a_task_of_a_seed_the_crawl_does_not_list_is_named_and_exit_1(
    server, started, tmp_path, task
):
    # What a Redis restarted empty can hold once a worker wrote to it again: a task of a
    # seed that the crawl's seed list (gone, or shorter) does not have.
    server.site({"/": "".join(f'<a href="/p{i}">p</a>' for i in range(40))})
    server.site({f"/p{i}": Reply(body="page", delay=0.1) for i in range(40)})
    plain = server_with(started, tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", *crawl(tmp_path, server, plain.url),
         "-s", "CONCURRENT_REQUESTS=1"],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not any(path.startswith("/p") for path in server.paths()):
            assert proc.poll() is None and time.monotonic() < deadline, "the crawl never ran"
            time.sleep(0.01)
        conn = redis.Redis(port=plain.port)
        conn.rpush("traverse:traverse:seed:7:queue", f'["{server.url("/p0")}",1]')
        conn.zadd("traverse:traverse:ready", {task: 0})
        conn.close()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    expected = (
        f"ERROR: REDIS_URL: a task of crawl 'traverse' names seed 7, but the crawl lists "
        f"1 seed(s) at {plain.url}"
    )
    assert [line for line in stderr.splitlines() if expected in line], stderr[-3000:]
    assert not list((tmp_path / "manifests").glob("*.json"))  # nothing written as finished
