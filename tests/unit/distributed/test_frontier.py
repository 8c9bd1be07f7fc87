"""The Lua frontier in Redis against the reference ``Frontier``: same manifests.

Random link graphs, budgets and completion orders (hypothesis), run through a
real redis-server: pages are taken in random batches, completed in random
order, some leases lost on the way (their late results must be refused and the
pages fetched again), and the manifest rebuilt from the records in Redis must
equal the single-process one.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.redisserver import RedisServer
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.distributed import lua_scripts as scripts
from traverse_crawl.distributed.client import Keys
from traverse_crawl.distributed.frontier import (
    RemoteFrontier,
    join_sync,
    manifest_of,
    parse_tasks,
    rebuilt_frontier,
    replay_records,
)
from traverse_crawl.jobdir.state import page_record

pytestmark = pytest.mark.redis

SITE = "http://site.test"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    srv = RedisServer(Path(tmp_path_factory.mktemp("redis")))
    srv.start()
    yield srv
    srv.stop()


def fetch(url: str, graph: dict[str, list[str]]) -> Outcome:
    """A page's outcome: a snapshot-like record and its links (unknown URLs are 404s),
    and one off-origin link of its own, after its first link (``TRAVERSE_SKIPPED``)."""
    if url not in graph:
        return Outcome({"error": {"kind": "http-error", "message": "404", "status": 404}})
    off = [["http://other.test/" + url.rsplit("/", 1)[-1], "off-origin", 1]]
    return Outcome({"snapshot": {"url": url}}, links=list(graph[url]), skipped=off)


def reference(graph: dict[str, list[str]], pages: int, depth: int, rng: random.Random) -> Any:
    frontier = Frontier("s", SITE + "/", pages, depth, "live", skipped=True)
    waiting = list(frontier.admit())
    while waiting:
        adm = waiting.pop(rng.randrange(len(waiting)))
        outcome = fetch(adm.url, graph)  # links at the depth limit too, as with TRAVERSE_SKIPPED
        waiting += frontier.record(adm.index, outcome)[1]
    assert frontier.finished
    return frontier.manifest(), frontier


def distributed(
    conn: redis.Redis, crawl: str, graph: dict[str, list[str]], config: TraverseConfig,
    rng: random.Random,
) -> Any:  # fmt: skip
    keys = Keys(crawl)
    join_sync(conn, keys, config, [Seed("s", SITE + "/")])
    join_sync(conn, keys, config, [Seed("s", SITE + "/")])  # a second worker: a no-op
    take = conn.register_script(scripts.TAKE)
    commit = conn.register_script(scripts.COMMIT)
    done = conn.register_script(scripts.MANIFEST_DONE)
    held: list[Any] = []
    for _ in range(10000):
        tasks = parse_tasks(take(args=[keys.prefix, "w", rng.randint(1, 4), 60000]))
        held += tasks
        if not held:
            break
        task = held.pop(rng.randrange(len(held)))
        if task.index is None:
            assert done(args=[keys.prefix, task.seed, task.token]) == 1
            continue
        if rng.random() < 0.1:  # a stalled worker: its lease is taken over first
            conn.zadd(keys.leases, {task.name: 0})
            retaken = parse_tasks(take(args=[keys.prefix, "w2", 1000, 60000]))
            held += retaken
            assert task.name in {t.name for t in retaken}
        outcome = fetch(task.url, graph)
        links = outcome.links  # unfiltered: the Lua applies the depth limit itself
        record = page_record(0, task.index, (task.url, task.depth), outcome, None)
        args = [keys.prefix, task.seed, task.index, task.token, json.dumps(record)]
        taking = rng.choice((0, 0, 2))  # a commit may take tasks in the same call
        result = commit(args=[*args, json.dumps(links), "w", taking, 60000])
        status = result[0]
        held += parse_tasks(result[3:])
        stale = task.name in {t.name for t in held}
        assert status == (-1 if stale else 1)
    assert conn.get(keys.written) == "1"
    records = [json.loads(v) for v in conn.hgetall(keys.seed(0, "records")).values()]
    frontier = manifest_of(Seed("s", SITE + "/"), 0, config, records)
    assert frontier.finished and len(records) == len(frontier.pages)
    return frontier.manifest(), keys, frontier


async def rebuilt_in_batches(
    url: str, keys: Keys, config: TraverseConfig, size: int, spool: Spool
) -> Frontier:
    """As a worker rebuilds a seed to write its files: its records read a few at a time."""
    conn = redis.asyncio.Redis.from_url(url, decode_responses=True)
    remote = RemoteFrontier(conn, keys, 60, "writer")
    frontier, start = rebuilt_frontier(Seed("s", SITE + "/"), config, spool), 0
    while True:
        batch = await remote.records(0, start, size)
        replay_records(frontier, 0, batch)
        start += len(batch)
        if len(batch) < size:
            break
    await conn.aclose()
    return frontier


graphs = st.integers(min_value=1, max_value=40).flatmap(
    lambda n: st.lists(
        st.lists(st.integers(min_value=0, max_value=n + 3), max_size=8), min_size=n, max_size=n
    )
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    links=graphs,
    pages=st.integers(min_value=0, max_value=30),
    depth=st.integers(min_value=0, max_value=4),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_lua_frontier_equals_the_reference(
    server: RedisServer,
    tmp_path: Path,
    links: list[list[int]],
    pages: int,
    depth: int,
    seed: int,
) -> None:
    graph = {f"{SITE}/" if i == 0 else f"{SITE}/p{i}": [
        f"{SITE}/" if j == 0 else f"{SITE}/p{j}" for j in out
    ] for i, out in enumerate(links)}  # fmt: skip
    config = TraverseConfig.from_settings(
        {"TRAVERSE_MAX_PAGES": pages, "TRAVERSE_MAX_DEPTH": depth, "TRAVERSE_MODE": "live",
         "TRAVERSE_SKIPPED": True}
    )  # fmt: skip
    conn = redis.Redis.from_url(server.url, decode_responses=True)
    crawl = f"prop-{time.monotonic_ns()}"
    expected, ref = reference(graph, pages, depth, random.Random(seed))
    manifest, keys, rebuilt = distributed(conn, crawl, graph, config, random.Random(seed + 1))
    assert manifest == expected
    skipped = list(ref.skipped.lines(ref.seen))
    assert list(rebuilt.skipped.lines(rebuilt.seen)) == skipped
    # Read back in batches into a spooled frontier, as a worker writes a seed's files.
    spool = Spool(str(tmp_path))
    with ThreadPoolExecutor(1) as thread:  # asyncio.run: not in this thread's running loop
        run = thread.submit(asyncio.run, rebuilt_in_batches(server.url, keys, config, 3, spool))
        batched = run.result()
    assert batched.manifest() == expected
    assert list(batched.skipped.lines(batched.seen)) == skipped
    spool.close()
    # The Lua port's own state, not only the manifest rebuilt from its records.
    queue = [tuple(json.loads(e)[:2]) for e in conn.lrange(keys.seed(0, "queue"), 0, -1)]
    assert queue == ref.queue
    state = conn.hgetall(keys.seed(0, "state"))
    assert (int(state["admitted"]), int(state["committed"])) == (ref.admitted, len(ref.pages))
    assert conn.scard(keys.seed(0, "overflow")) == len(ref.overflow)
    assert not conn.zcard(keys.ready) and not conn.zcard(keys.leases)
    conn.close()
