"""The crawl's frontier in Redis: the Lua scripts of ``lua_scripts.py``, called from Python.

``RemoteFrontier`` (asyncio client, the workers) and ``join_sync`` (the ``crawl``
command's check, before the reactor) speak the same scripts. What is kept mirrors
``JOBDIR`` (``jobdir/state.py``), and a seed's manifest is rebuilt from its page
records by the reference ``Frontier`` (``manifest_of``), so it is byte for byte the
manifest of a single-process crawl; so is its skipped file (``TRAVERSE_SKIPPED``), from
the links each record keeps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier, seed_frontier
from traverse_crawl.crawl.scope import policy_defaults, policy_settings
from traverse_crawl.crawl.seeds import Seed, seed_dict, seed_from_dict
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.distributed import lua_scripts as scripts
from traverse_crawl.distributed.client import Keys, connect_sync
from traverse_crawl.errors import ConfigError
from traverse_crawl.jobdir import state as jobstate
from traverse_crawl.storage.location import canonical

FORMAT = "traverse_crawl-redis"
VERSION = 1
# Page records read from Redis at a time while a seed's manifest is rebuilt: with the
# crawl's spool the rebuilt pages and skipped links wait on disk, so the writer's memory
# does not grow with the seed (as a single process's frontier, crawl/frontier.py).
RECORDS_READ = 1000


# Settings of the definition written only when not at their default (so a crawl defined
# before they existed still matches), and that default.
OPTIONAL: dict[str, Any] = {"TRAVERSE_SKIPPED": False, "TRAVERSE_MAX_LINKS_PER_PAGE": 10000}
# The crawl policy (crawl/scope.py): which links are admitted, so which pages a manifest has.
OPTIONAL.update(policy_defaults())


def definition(config: TraverseConfig) -> str:
    """The settings every worker of a crawl must share, as the JSON kept in Redis."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "TRAVERSE_MODE": config.mode,
        "TRAVERSE_STORE": canonical(config.store),
        "TRAVERSE_MANIFEST_DIR": canonical(config.manifest_dir),
        "TRAVERSE_MAX_PAGES": config.max_pages,
        "TRAVERSE_MAX_DEPTH": config.max_depth,
        "TRAVERSE_MIN_DELAY": config.min_delay,
        "ROBOTSTXT_OBEY": config.robots_obey,
        "TRAVERSE_ROBOTS_POLICY": config.robots_policy,
        "TRAVERSE_ROBOTS_MATCHER": config.robots_matcher,
        "TRAVERSE_SITEMAPS": config.sitemaps,
        # Its first product token picks the robots.txt group: workers with different
        # ones would mix groups in one manifest.
        "USER_AGENT": config.user_agent,
    }
    if config.skipped:  # every worker keeps the links it did not follow (OPTIONAL)
        doc["TRAVERSE_SKIPPED"] = True
    if config.max_links_per_page != OPTIONAL["TRAVERSE_MAX_LINKS_PER_PAGE"]:
        # It decides which links of a page are followed, so which pages a manifest has.
        doc["TRAVERSE_MAX_LINKS_PER_PAGE"] = config.max_links_per_page
    doc.update(policy_settings(config))
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def seed_json(seed: Seed) -> str:
    return json.dumps(seed_dict(seed), sort_keys=True, separators=(",", ":"))


def seed_from_json(text: str) -> Seed:
    return seed_from_dict(json.loads(text))


def join_args(keys: Keys, config: TraverseConfig, seeds: list[Seed]) -> list[Any]:
    args: list[Any] = [keys.prefix, definition(config)]
    for seed in seeds:
        frontier = seed_frontier(seed, config)  # its budgets and seen key
        args += [seed.id, seed_json(seed), frontier.seed_frontier_url]
        args += [
            frontier.max_pages,
            frontier.max_depth,
            seen_key_of(frontier)(frontier.seed_frontier_url),
        ]
    return args


def seen_key_of(frontier: Frontier) -> Callable[[str], str]:
    """What the crawl's seen set in Redis holds for a URL of this seed."""
    policy = frontier.policy
    return (lambda url: url) if policy is None else policy.key


def link_entries(frontier: Frontier, index: int, outcome: Any) -> list[Any]:
    """A committed page's links for COMMIT: each its URL, or under a crawl policy
    [URL, seen key, hop count of the page] (what ``Frontier._discover`` is given)."""
    policy = frontier.policy
    if policy is None:
        return list(outcome.links)
    hop = frontier.hop(index, outcome.offhost_final_url)
    return [[link, policy.key(link), hop] for link in outcome.links]


def check_join(result: list[Any], keys: Keys, config: TraverseConfig) -> None:
    """``ConfigError`` naming the first setting that differs from the crawl's, or a seed."""
    mine = definition(config)
    if result[0] != mine:
        theirs, ours = json.loads(result[0]), json.loads(mine)
        for name in sorted(set(ours) | set(theirs)):
            have, want = ours.get(name, OPTIONAL.get(name)), theirs.get(name, OPTIONAL.get(name))
            if have != want:
                raise ConfigError(
                    name, f"this worker has {have!r}, but crawl {keys.crawl_id!r} in "
                    f"Redis has {want!r}; every worker of a crawl must define it alike"
                )  # fmt: skip
    if len(result) > 1:
        raise ConfigError(
            "seeds", f"seed id(s) {', '.join(map(repr, result[1:]))} are already in crawl "
            f"{keys.crawl_id!r} with another URL or content type"
        )  # fmt: skip


def join_crawl(config: TraverseConfig, seeds: list[Seed]) -> None:
    """The ``crawl`` command's check: Redis answers, this worker fits the crawl, seeds added."""
    conn = connect_sync(config.redis)
    try:
        join_sync(conn, Keys(config.redis.crawl_id), config, seeds)
    finally:
        conn.close()


def join_sync(conn: redis.Redis, keys: Keys, config: TraverseConfig, seeds: list[Seed]) -> None:
    """Check this worker against the crawl and add its seeds (before the reactor)."""
    result = conn.register_script(scripts.JOIN)(args=join_args(keys, config, seeds))
    check_join(list(result), keys, config)


@dataclass
class Task:
    """A taken task: a page to fetch (``index``) or a seed's manifest to write (None)."""

    seed: int
    index: int | None
    token: str
    url: str = ""
    depth: int = 0
    parent: str | None = None
    parent_hop: int = 0  # the hop count of the page that queued it (crawl/scope.py)

    @property
    def name(self) -> str:
        return f"{self.seed}:{'m' if self.index is None else self.index}"


def parse_tasks(flat: list[str]) -> list[Task]:
    out = []
    for k in range(0, len(flat), 3):
        name, token, entry = flat[k], flat[k + 1], flat[k + 2]
        seed, _, index = name.partition(":")
        if index == "m":
            out.append(Task(int(seed), None, token))
        else:
            url, depth, *rest = json.loads(entry)
            task = Task(int(seed), int(index), token, url, int(depth), *rest[:1])
            task.parent_hop = int(rest[1]) if len(rest) > 1 else 0
            out.append(task)
    return out


class RemoteFrontier:
    """One worker's handle on the crawl's frontier in Redis (all calls async)."""

    def __init__(self, conn: redis.asyncio.Redis, keys: Keys, lease: float, worker: str) -> None:
        self.conn = conn
        self.keys = keys
        self.lease_ms = max(1, int(lease * 1000))
        self.worker = worker
        self._join = conn.register_script(scripts.JOIN)
        self._take = conn.register_script(scripts.TAKE)
        self._commit = conn.register_script(scripts.COMMIT)
        self._renew = conn.register_script(scripts.RENEW)
        self._release = conn.register_script(scripts.RELEASE)
        self._done = conn.register_script(scripts.MANIFEST_DONE)

    async def join(self, config: TraverseConfig, seeds: list[Seed]) -> None:
        result = await self._join(args=join_args(self.keys, config, seeds))
        check_join(list(result), self.keys, config)

    async def take(self, count: int) -> list[Task]:
        flat = await self._take(args=[self.keys.prefix, self.worker, count, self.lease_ms])
        return parse_tasks(list(flat))

    async def commit(
        self, task: Task, record: dict[str, Any], links: list[Any], take: int = 0
    ) -> tuple[int, list[Task]]:
        """Keep a page's outcome, and take up to ``take`` tasks in the same round trip.

        The status: 1 kept; 0 a duplicate; -1 refused (the lease expired or was taken over).
        """
        result = await self._commit(
            args=[self.keys.prefix, task.seed, task.index or 0, task.token,
                  json.dumps(record, separators=(",", ":")), json.dumps(links),
                  self.worker, take, self.lease_ms]
        )  # fmt: skip
        return int(result[0]), parse_tasks(list(result[3:]))

    async def renew(self, tasks: list[Task]) -> set[str]:
        """Extend the leases of ``tasks``; the names of those no longer held."""
        pairs = [value for task in tasks for value in (task.name, task.token)]
        lost = await self._renew(args=[self.keys.prefix, self.worker, self.lease_ms, *pairs])
        return set(lost)

    async def release(self, tasks: list[Task]) -> int:
        pairs = [value for task in tasks for value in (task.name, task.token)]
        return int(await self._release(args=[self.keys.prefix, self.worker, *pairs]))

    async def manifest_done(self, task: Task) -> bool:
        return bool(await self._done(args=[self.keys.prefix, task.seed, task.token]))

    async def seeds(self, start: int) -> list[Seed]:
        found = await self.conn.lrange(self.keys.seedlist, start, -1)
        return [seed_from_json(str(text)) for text in found]

    async def progress(self) -> tuple[int, int]:
        """(seeds in the crawl, manifests written)."""
        seeds, written = (
            await self.conn.llen(self.keys.seedlist),
            await self.conn.get(self.keys.written),
        )
        return int(seeds), int(written or 0)

    async def records(self, seed: int, start: int, count: int = RECORDS_READ) -> list[Any]:
        """The page records of indices ``start`` to ``start + count - 1``, in index order,
        up to the first one missing. A finished seed has a record for every index below
        its page count, so reading from 0 until a short batch reads them all."""
        indices = [str(index) for index in range(start, start + count)]
        found = await self.conn.hmget(self.keys.seed(seed, "records"), indices)
        out = []
        for text in found:
            if text is None:
                break
            out.append(json.loads(text))
        return out


def rebuilt_frontier(seed: Seed, config: TraverseConfig, spool: Spool | None = None) -> Frontier:
    """An empty reference ``Frontier`` of the seed, for ``replay_records``."""
    frontier = seed_frontier(seed, config, spool=spool, skipped=config.skipped)
    frontier.admit()
    return frontier


def replay_records(frontier: Frontier, key: int, records: list[dict[str, Any]]) -> None:
    """Feed page records to the frontier; batches in index order replay as one would."""
    jobstate.replay({key: frontier}, records)


def manifest_of(
    seed: Seed, key: int, config: TraverseConfig, records: list[dict[str, Any]]
) -> Frontier:
    """The seed's frontier rebuilt by the reference ``Frontier`` from its page records."""
    frontier = rebuilt_frontier(seed, config)
    replay_records(frontier, key, records)
    return frontier
