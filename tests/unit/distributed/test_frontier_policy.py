"""The Lua frontier against the reference ``Frontier`` under a crawl policy: extra hops
(hop counts kept in Redis queue entries) and a seen key that is not the URL."""

from __future__ import annotations

import json
import random
import time
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.redisserver import RedisServer
from tests.unit.distributed.test_frontier import server  # noqa: F401  (fixture)
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier, Outcome, seed_frontier
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.distributed import lua_scripts as scripts
from traverse_crawl.distributed.client import Keys
from traverse_crawl.distributed.frontier import join_sync, link_entries, manifest_of, parse_tasks
from traverse_crawl.jobdir.state import page_record

pytestmark = pytest.mark.redis

SEED = Seed("s", "http://site.test/")
HOSTS = ("http://site.test/", "http://other.test/", "http://far.test/")


def node(i: int) -> str:
    """Page i: on one of three hosts; pages 2k and 2k+1 are one page under
    ``sorted-query``, two spellings of its query."""
    query = "?b=1&a=2" if i % 2 else "?a=2&b=1"
    return f"{HOSTS[i // 2 % 3]}p{i // 2}{query}" if i > 1 else SEED.url


def fetch(frontier: Frontier, index: int, url: str, graph: dict[str, list[str]]) -> Outcome:
    """What the spider hands the frontier: links judged by the policy at the page's hop."""
    if url not in graph:
        return Outcome({"error": {"kind": "http-error", "message": "404", "status": 404}})
    off = frontier.off_scope(url)
    hop = frontier.hop(index, off)
    assert frontier.policy is not None
    links = []
    if frontier.follows_hop(hop):
        links = [link for link in graph[url] if frontier.policy.judge(link, hop) is None]
    return Outcome(
        {"snapshot": {"url": url}}, links=list(dict.fromkeys(links)), offhost_final_url=off
    )


def reference(graph: dict[str, list[str]], config: TraverseConfig, rng: random.Random) -> Any:
    frontier = seed_frontier(SEED, config)
    waiting = list(frontier.admit())
    while waiting:
        adm = waiting.pop(rng.randrange(len(waiting)))
        waiting += frontier.record(adm.index, fetch(frontier, adm.index, adm.url, graph))[1]
    assert frontier.finished
    return frontier


def distributed(
    conn: redis.Redis, graph: dict[str, list[str]], config: TraverseConfig, rng: random.Random
) -> tuple[Frontier, list[list[Any]]]:
    keys = Keys(f"policy-{time.monotonic_ns()}")
    join_sync(conn, keys, config, [SEED])
    take = conn.register_script(scripts.TAKE)
    commit = conn.register_script(scripts.COMMIT)
    done = conn.register_script(scripts.MANIFEST_DONE)
    worker = seed_frontier(SEED, config)  # as a worker's, filled from its tasks
    held: list[Any] = []
    for _ in range(10000):
        held += parse_tasks(take(args=[keys.prefix, "w", rng.randint(1, 4), 60000]))
        if not held:
            break
        task = held.pop(rng.randrange(len(held)))
        if task.index is None:
            assert done(args=[keys.prefix, task.seed, task.token]) == 1
            continue
        if task.parent_hop:
            worker.parent_hops[task.index] = task.parent_hop
        outcome = fetch(worker, task.index, task.url, graph)
        links = link_entries(worker, task.index, outcome) if worker.may_follow(task.depth) else []
        record = page_record(0, task.index, (task.url, task.depth), outcome, None)
        args = [keys.prefix, task.seed, task.index, task.token, json.dumps(record)]
        result = commit(args=[*args, json.dumps(links), "w", rng.choice((0, 2)), 60000])
        assert result[0] == 1
        held += parse_tasks(result[3:])
    records = [json.loads(v) for v in conn.hgetall(keys.seed(0, "records")).values()]
    rebuilt = manifest_of(SEED, 0, config, records)
    return rebuilt, [json.loads(e) for e in conn.lrange(keys.seed(0, "queue"), 0, -1)]


graphs = st.integers(min_value=1, max_value=30).flatmap(
    lambda n: st.lists(
        st.lists(st.integers(min_value=0, max_value=n + 3), max_size=6), min_size=n, max_size=n
    )
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    links=graphs,
    hops=st.integers(min_value=0, max_value=3),
    seen_key=st.sampled_from(["verbatim", "sorted-query"]),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_lua_frontier_equals_the_reference_under_a_policy(
    server: RedisServer,  # noqa: F811
    links: list[list[int]],
    hops: int,
    seen_key: str,
    seed: int,
) -> None:
    graph = {node(i): [node(j) for j in out] for i, out in enumerate(links)}
    config = TraverseConfig.from_settings(
        {"TRAVERSE_MAX_PAGES": 25, "TRAVERSE_MAX_DEPTH": 4, "TRAVERSE_MODE": "live",
         "TRAVERSE_EXTRA_HOPS": hops, "TRAVERSE_SEEN_KEY": seen_key,
         "TRAVERSE_TRAP_GUARDS": True}  # a policy even at hops 0 and verbatim
    )  # fmt: skip
    conn = redis.Redis.from_url(server.url, decode_responses=True)
    expected = reference(graph, config, random.Random(seed))
    rebuilt, queue = distributed(conn, graph, config, random.Random(seed + 1))
    assert rebuilt.manifest() == expected.manifest()
    # The Lua port's own queue: the URLs as written, and the linking pages' hop counts.
    assert [tuple(entry[:2]) for entry in queue] == expected.queue
    hops = {index: entry[3] for index, entry in enumerate(queue) if len(entry) > 3}
    assert hops == expected.parent_hops == rebuilt.parent_hops
    conn.close()
