"""One worker of a distributed crawl: the spider's side of ``REDIS_URL``.

The spider's ``start()`` is this worker's loop: it takes tasks from Redis while it has
room, yields each page as the request a single process sends, commits outcomes (with
their lease tokens) through ``CommitPipeline``, renews its leases, writes the manifests
of the seeds it takes, and ends when every seed has its manifest (docs/architecture.md,
"Distributed crawls"). Every Redis call runs on the reactor's asyncio loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from redis.exceptions import ResponseError
from scrapy.crawler import Crawler

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl import seeds as seedlib
from traverse_crawl.crawl.frontier import Admission, Frontier, Outcome
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.distributed.client import (
    DATA_ERRORS,
    Keys,
    RedisLost,
    Retrying,
    check_identity,
    claim_identity,
    client,
    service_error,
)
from traverse_crawl.distributed.frontier import (
    RECORDS_READ,
    RemoteFrontier,
    Task,
    link_entries,
    rebuilt_frontier,
    replay_records,
)
from traverse_crawl.errors import ConfigError, FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.jobdir.state import page_record
from traverse_crawl.manifests.pipeline import (
    manifest_path,
    shown_manifest_path,
    write_manifest_once,
    write_skipped,
)
from traverse_crawl.runtime.stop import stopping
from traverse_crawl.signals import manifest_written
from traverse_crawl.stats import inc, inc_lost
from traverse_crawl.storage.location import open_location, spool_directory
from traverse_crawl.utils.redact import redact_url

logger = logging.getLogger(__name__)
T = TypeVar("T")
POLL_MAX = 0.5  # seconds between polls of an empty queue, at most, while the crawl has no seed
# ... and while it has seeds to finish (else the others' commits take every new task):
POLL_ACTIVE = 0.05


class Worker:
    """This process's part of the crawl: its pages become requests, and their outcomes
    items, through the spider's ``Frontiers``, as in one process."""

    def __init__(
        self,
        frontiers: Frontiers,
        crawler: Crawler,
        config: TraverseConfig,
        store_found: Callable[[], bool],
    ) -> None:
        self.frontiers = frontiers
        self.store_found = store_found  # whether replay has a store to read (asked once)
        self.crawler = crawler
        self.config = config
        self.redis = config.redis
        self.keys = Keys(self.redis.crawl_id)
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.retrying = Retrying(self.redis)
        self.conn = client(self.redis)
        self.remote = RemoteFrontier(self.conn, self.keys, self.redis.lease_timeout, self.name)
        # Twice CONCURRENT_REQUESTS pages in hand, so leases are not spent in a local
        # queue; pages whose outcome is on its way to Redis count: the downloader must
        # not run dry.
        self.room = 2 * max(1, crawler.settings.getint("CONCURRENT_REQUESTS"))
        self.held: dict[str, Task] = {}  # task name -> taken, not committed
        self.inbox: list[Task] = []  # taken with a commit, not started yet
        self.wake = asyncio.Event()
        self.heartbeat: asyncio.Task[None] | None = None
        self.writing: set[asyncio.Task[None]] = set()
        self.failed = False
        self.dry = False  # the last commit found the queue empty: wait for the next poll
        self.closing: asyncio.Future[None] | None = None
        self.identity = ""  # the crawl's identity token in Redis, once joined

    @property
    def seeds(self) -> list[seedlib.Seed]:
        """The crawl's seeds, from Redis, by key, as they are learned: the spider's list
        (``Frontiers.seeds``), which its ``start()`` empties before this worker starts."""
        return self.frontiers.seeds

    async def check_identity(self) -> None:
        """``CrawlVanished`` (a ``RedisLost``) when the crawl's state left Redis."""
        await self.call(check_identity, self.conn, self.keys, self.identity, self.redis.url)

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """``fn(*args)`` through ``Retrying``; a Redis that refuses the crawl's commands
        (full, read-only) or holds other data under its keys is a ``RedisLost`` too."""
        try:
            return await self.retrying(fn, *args)
        except ConfigError:  # a setting that differs from the crawl's: the caller's
            raise
        except (ResponseError, *DATA_ERRORS) as exc:
            raise RedisLost(str(service_error(self.redis, exc))) from None

    # -- the loop ------------------------------------------------------------

    async def start(self, seeds: list[seedlib.Seed]) -> AsyncIterator[Any]:
        """The spider's ``start()``: ``seeds`` (its arguments') join the crawl first."""
        try:
            await self.call(self.remote.join, self.config, seeds)
            self.identity = await self.call(claim_identity, self.conn, self.keys)
            self.heartbeat = asyncio.ensure_future(self._heartbeat())
            logger.info(
                "worker %s joined crawl %r at %s", self.name, self.keys.crawl_id,
                redact_url(self.redis.url),
            )  # fmt: skip
            async for out in self._loop():
                yield out
        except RedisLost as exc:
            self._fail(str(exc))

    async def _loop(self) -> AsyncIterator[Any]:
        started = time.monotonic()
        wait = 0.05
        while not stopping(self.crawler) and not self.failed:
            tasks, self.inbox = self.inbox, []
            free = self.room - len(self.held)
            if not tasks and free > 0 and not self.dry:
                tasks = await self.call(self.remote.take, free)
                self.held.update((task.name, task) for task in tasks)
            for task in tasks:
                inc(self.crawler.stats, "distributed/taken")
                for out in await self._start_task(task):
                    yield out
            if tasks:
                wait = 0.05
                continue
            active = bool(self.held)
            if not self.held:  # the crawl can only be over (or empty) when nothing is held
                await self.check_identity()
                seeds, written = await self.call(self.remote.progress)
                active = written < seeds
                if seeds and written >= seeds and not self.held:
                    logger.info("crawl %r finished: %d seed(s), every manifest written",
                                self.keys.crawl_id, seeds)  # fmt: skip
                    return
                if not seeds and time.monotonic() - started >= self.redis.idle_timeout:
                    logger.info(
                        "crawl %r has no seed after %g s (TRAVERSE_IDLE_TIMEOUT); exiting",
                        self.keys.crawl_id, self.redis.idle_timeout,
                    )  # fmt: skip
                    return
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), wait)
            except asyncio.TimeoutError:
                self.dry = False
                wait = min(wait * 2, POLL_ACTIVE if active else POLL_MAX)

    async def _start_task(self, task: Task) -> list[Any]:
        if task.index is None:
            job = asyncio.ensure_future(self._write_manifest(task))
            self.writing.add(job)
            job.add_done_callback(self.writing.discard)
            return []
        frontier = await self._frontier(task.seed)
        if not self._sendable(frontier):
            error = (
                seedlib.invalid_seed_error(frontier.seed_url)
                if not frontier.seed_is_valid
                else FetchError("invalid-config", "mode 'replay' requires a store")
            )
            outcome = Outcome({"error": error.to_dict()})
            return list(self.frontiers.finish_page(task.seed, 0, outcome))
        return [self._request(frontier, task)]

    def _sendable(self, frontier: Frontier) -> bool:
        valid = frontier.seed_is_valid
        return valid and (self.config.mode != "replay" or self.store_found())

    def _request(self, frontier: Frontier, task: Task) -> Any:
        assert task.index is not None
        while len(frontier.queue) <= task.index:  # placeholders: only taken entries are read
            frontier.queue.append(("", 0))
        frontier.queue[task.index] = (task.url, task.depth)
        if task.parent_hop:
            frontier.parent_hops[task.index] = task.parent_hop
        if task.parent is not None:
            frontier.discovered_from[task.url] = task.parent
        page_id = urls.page_id(frontier.seed_id, task.url)
        admission = Admission(task.index, task.url, task.depth, page_id)
        return self.frontiers.page_request(task.seed, admission)

    def _schedule(self, task: Task) -> bool:
        """A page taken with a commit to the scheduler now, not round through ``start()``."""
        engine = self.crawler.engine
        if task.index is None or task.seed >= len(self.seeds):  # a seed not joined yet
            return False
        frontier = self.frontiers.frontier(task.seed)
        if not self._sendable(frontier):
            return False
        if engine is None or engine.spider is None or stopping(self.crawler):
            return False
        engine.crawl(self._request(frontier, task))
        inc(self.crawler.stats, "distributed/taken")
        return True

    async def _frontier(self, key: int) -> Frontier:
        """The local view of seed ``key``: its settings and the entries taken from it."""
        if key >= len(self.seeds):
            known = len(self.seeds)
            found = await self.call(lambda: self.remote.seeds(known))
            # Another task may have added some of them meanwhile (a manifest's writer).
            new = found[len(self.seeds) - known :]
            self.seeds.extend(new)
        if key >= len(self.seeds):
            # A task of a seed the crawl does not list: its state left Redis (a restart
            # with the seed list gone, and a task written back since), or someone
            # else's data is under its keys. Either way nothing more can be recorded.
            await self.check_identity()
            raise RedisLost(
                f"REDIS_URL: a task of crawl {self.keys.crawl_id!r} names seed {key}, but "
                f"the crawl lists {len(self.seeds)} seed(s) at {redact_url(self.redis.url)}"
            )
        return self.frontiers.frontier(key)

    # -- results -------------------------------------------------------------

    async def commit(self, item: PageItem) -> None:
        """Give one page's outcome to the crawl (``CommitPipeline``)."""
        task = self.held.get(f"{item.seed_key}:{item.index}")
        outcome, item.outcome = item.outcome, None
        if task is None or outcome is None or self.failed:
            return  # its lease was lost: another worker fetches it again
        frontier = self.frontiers.frontier(item.seed_key)
        warning = frontier.store_warnings.pop(item.index, None)
        record = page_record(item.seed_key, item.index, (task.url, task.depth), outcome, warning)
        links = (
            link_entries(frontier, item.index, outcome) if frontier.may_follow(task.depth) else []
        )
        self.held.pop(task.name, None)
        take = 0 if stopping(self.crawler) else self.room - len(self.held) - len(self.inbox)
        try:
            status, tasks = await self.call(self.remote.commit, task, record, links, take)
        except RedisLost as exc:
            self._fail(str(exc))
            return
        finally:
            self.wake.set()
        self.dry = len(tasks) < take
        for new in tasks:  # taken with the commit: scheduled now, or started by the loop
            self.held[new.name] = new
            if not self._schedule(new):
                self.inbox.append(new)
        if status < 0:
            try:  # a crawl whose state vanished refuses every result too
                await self.check_identity()
            except RedisLost as exc:
                self._fail(str(exc))
                return
            inc(self.crawler.stats, "distributed/refused")
            logger.warning("page %s: lease lost before its result was kept; another worker "
                           "fetches it again", task.url)  # fmt: skip
        else:
            inc(self.crawler.stats, "distributed/committed")

    async def _write_manifest(self, task: Task) -> None:
        spool = Spool(spool_directory(self.config.manifest_dir))
        try:
            await self._frontier(task.seed)  # the seed list, up to this seed
            seed = self.seeds[task.seed]
            frontier, start = rebuilt_frontier(seed, self.config, spool), 0
            while True:  # the records in batches: the rebuilt pages wait in the spool
                batch = await self.call(self.remote.records, task.seed, start)
                try:
                    replay_records(frontier, task.seed, batch)
                except DATA_ERRORS as exc:  # records that are not a worker's
                    raise RedisLost(str(service_error(self.redis, exc))) from None
                start += len(batch)
                if len(batch) < RECORDS_READ:
                    break
            if not frontier.finished:  # the Lua port and the reference disagree: a bug
                logger.error(
                    "seed %r: its records in Redis do not make a finished crawl "
                    "(%d page(s)); manifest not written",
                    seed.id,
                    len(frontier.pages),
                )
                inc_lost(self.crawler.stats, "distributed/error")
                return
            path = manifest_path(self.config.manifest_dir, seed.id)
            location = open_location(
                "TRAVERSE_MANIFEST_DIR", self.config.manifest_dir, self.crawler.settings
            )
            # The skipped file first: once a seed's manifest is there, so is that file.
            await asyncio.to_thread(write_skipped, path, frontier, location)
            if frontier.skipped is not None:
                inc(self.crawler.stats, "manifest/skipped_written")
            # Once: a worker that takes the task over after a lease ran out (its holder
            # cut off from Redis, or unable to write the items file) finds the same
            # bytes there and leaves them.
            await asyncio.to_thread(write_manifest_once, path, frontier, location)
            # Items files (TRAVERSE_EXTRACT) are written from the manifest, as in one
            # process, and before Redis hears the seed is done: a worker killed before
            # that, or one whose items file could not be written, leaves the seed to
            # another worker, items file included.
            answers = await self.crawler.signals.send_catch_log_async(
                manifest_written, seed_id=seed.id, path=path
            )
            if any(answer is False for _receiver, answer in answers):
                logger.error("seed %r: its items file was not written; another worker will "
                             "try after TRAVERSE_LEASE_TIMEOUT", seed.id)  # fmt: skip
                return  # counted lost where the write failed
            done = await self.call(self.remote.manifest_done, task)
            shown = shown_manifest_path(self.config.manifest_dir, seed.id)
            logger.info("manifest for seed %r: %s", seed.id, shown)
            inc(self.crawler.stats, "distributed/manifests" if done else "distributed/refused")
        except RedisLost as exc:
            self._fail(str(exc))
        except OSError as exc:
            what = "manifest or skipped file" if self.config.skipped else "manifest"
            logger.error("seed %r: cannot write its %s (%s); another worker will try "
                         "after TRAVERSE_LEASE_TIMEOUT", task.seed, what, exc)  # fmt: skip
            inc_lost(self.crawler.stats, "manifest/error")
        finally:
            spool.close()
            self.held.pop(task.name, None)
            self.wake.set()

    # -- leases --------------------------------------------------------------

    async def _heartbeat(self) -> None:
        # Every third of TRAVERSE_LEASE_TIMEOUT; a page whose lease was lost is dropped,
        # and Redis refuses its result.
        interval = self.redis.lease_timeout / 3
        while not self.failed:
            await asyncio.sleep(interval)
            held = list(self.held.values())
            try:
                await self.check_identity()
                lost = await self.call(self.remote.renew, held)
            except RedisLost as exc:
                self._fail(str(exc))
                return
            for name in lost:
                if self.held.pop(name, None) is not None:
                    inc(self.crawler.stats, "distributed/lost")
            if lost:
                logger.warning("%d lease(s) lost (this worker was too slow or stopped); "
                               "other workers fetch those pages", len(lost))  # fmt: skip
                self.wake.set()

    def _fail(self, message: str) -> None:
        if self.failed:
            return
        self.failed = True
        logger.error("%s", message)
        inc_lost(self.crawler.stats, "distributed/error")
        engine = self.crawler.engine
        if engine is not None:
            self.closing = asyncio.ensure_future(engine.close_spider_async(reason="redis-lost"))

    async def close(self) -> None:
        """Give back what this worker holds (a graceful stop), then disconnect."""
        if self.heartbeat is not None:
            self.heartbeat.cancel()
        if self.writing:
            await asyncio.gather(*self.writing, return_exceptions=True)
        held = list(self.held.values())
        if not self.failed:
            try:
                released = await asyncio.wait_for(self.remote.release(held), 5)
            except Exception as exc:  # the leases expire instead
                logger.warning("could not give back %d page(s) to Redis (%s); they go back "
                               "after TRAVERSE_LEASE_TIMEOUT", len(held), exc)  # fmt: skip
            else:
                inc(self.crawler.stats, "distributed/released", released)
        with contextlib.suppress(Exception):  # a lost Redis: nothing left to close cleanly
            await self.conn.aclose()
