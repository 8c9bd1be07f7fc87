"""``JOBDIR``: the crawl's state on disk, for pause, resume and crashes (docs/long-crawls.md).

``JOBDIR`` is Scrapy's setting; what is kept in it is ours, one append-only journal
(``jobdir/journal.py``), and none of Scrapy's own JOBDIR files (docs/architecture.md,
"State and durability"). ``open_job`` checks it before the first request;
``JournalPipeline`` (after the store pipeline) appends each page's outcome once its
snapshot is stored, so a kept outcome never names a snapshot that a crash lost.
"""

from __future__ import annotations

import fcntl
import logging
import os
from dataclasses import dataclass, field
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.task import LoopingCall
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.scope import policy_settings
from traverse_crawl.crawl.seeds import Seed, seeds_from_args
from traverse_crawl.errors import ConfigError
from traverse_crawl.jobdir import state as jobstate
from traverse_crawl.jobdir.journal import JOURNAL_NAME, FileJournal, JournalError
from traverse_crawl.stats import START_REFUSED, inc, inc_lost

logger = logging.getLogger(__name__)

SYNC_INTERVAL = 1.0  # seconds: power loss costs at most this much (fsync in a thread)


@dataclass
class Job:
    """A crawl's JOBDIR, checked: the seeds, the records to replay, the journal."""

    directory: str
    seeds: list[Seed]
    records: list[dict[str, Any]]
    journal: FileJournal
    append: list[dict[str, Any]] = field(default_factory=list)
    stats: Any = None
    failed: bool = False  # a write failed: nothing more is kept (the exit status says so)
    # seed key -> the pages this run took from the journal (its manifest waits for
    # their items and these: ``manifests/pipeline.py``)
    resumed: dict[int, int] = field(default_factory=dict)

    def begin(self, stats: Any) -> list[dict[str, Any]]:
        """Open the journal, write what this run changes; the records to replay, once."""
        self.stats = stats
        self.journal.open()
        for record in self.append:
            self.journal.append(record)
        self.journal.sync()
        self.records = []
        return self.journal.release()  # not kept in memory after the replay

    def start(self, stats: Any) -> list[dict[str, Any]] | None:
        """``begin``; None when the journal cannot be written (the disk filled up since
        the command's check): the crawl requests nothing, and its exit status is 2."""
        try:
            return self.begin(stats)
        except OSError as exc:
            logger.error("JOBDIR: cannot write %s (%s); nothing was requested",
                         self.journal.path, exc.strerror or exc)  # fmt: skip
            stats.set_value(START_REFUSED, "JOBDIR")
            return None

    def resume_sitemaps(
        self, frontiers: dict[int, Frontier], records: list[dict[str, Any]]
    ) -> set[int]:
        """Each seed's kept sitemap URLs into its frontier, before its pages are replayed;
        the seeds that got them (the others read their sitemaps again)."""
        return jobstate.replay_sitemaps(frontiers, records)

    def resume(
        self, frontiers: dict[int, Frontier], records: list[dict[str, Any]]
    ) -> dict[int, int]:
        """Replay the kept pages into the frontiers; how many each seed took."""
        taken = jobstate.replay(frontiers, records)
        self.resumed = taken
        if self.stats is not None:
            self.stats.set_value("jobdir/resumed_pages", sum(taken.values()))
        logger.info("JOBDIR %s: resumed with %d page(s) already fetched", self.directory,
                    sum(taken.values()))  # fmt: skip
        return taken

    def keep(self, record: dict[str, Any]) -> None:
        if self.failed:
            return
        try:
            self.journal.append(record)
        except OSError as exc:
            self.error(exc)
        else:
            inc(self.stats, "jobdir/kept")

    def keep_sitemaps(self, key: int, frontier: Frontier) -> None:
        """A seed's sitemap URLs, once in (given back before its pages at a resume)."""
        found, warnings = frontier.sitemap_urls or [], frontier.sitemap_warnings
        self.keep(jobstate.sitemaps_record(key, found, warnings, frontier.max_pages))

    def error(self, exc: BaseException) -> None:
        """The crawl goes on; the state is incomplete, and the exit status says so."""
        if not self.failed:
            self.failed = True
            logger.error(
                "JOBDIR: cannot write %s (%s); the crawl goes on, but a resume will fetch "
                "the pages recorded from now on again",
                self.journal.path,
                getattr(exc, "strerror", None) or exc,
            )
        inc_lost(self.stats, "jobdir/error")


def jobdir_path(settings: Any) -> str | None:
    value = settings.get("JOBDIR")
    return str(value) if value else None


def resolve_seeds(
    settings: Any,
    config: TraverseConfig,
    args: tuple[str | None, ...],
    check: bool = False,
) -> tuple[list[Seed], Job | None]:
    """The crawl's seeds (``-a url``/``-a seeds``, or the JOBDIR's) and its checked JOBDIR.

    ``args`` are the spider's ``url, seeds, source_id, content_type``; with a
    JOBDIR they may all be left out (the seeds are in it). ``check``: the ``crawl``
    command's early check; the spider, built next in the same process, then
    reuses the journal it read instead of reading a large file again.
    """
    directory = jobdir_path(settings)
    if config.redis.enabled and all(a is None for a in args):
        return [], None  # a worker that joins a distributed crawl (docs/distributed.md)
    given = None if directory and all(a is None for a in args) else seeds_from_args(*args)
    if directory is None:
        assert given is not None
        return given, None
    lock_jobdir(directory)
    job = open_job(directory, config, given)
    if check:
        _checked[directory] = job.journal
    return job.seeds, job


_locks: dict[str, int] = {}  # JOBDIR (its real path) -> the descriptor holding its lock


def lock_jobdir(directory: str) -> None:
    """Hold an exclusive lock on ``directory`` for the rest of this process, so that
    two crawls never share one JOBDIR (each would fetch the other's pages again and
    append to one journal). A lock on the directory itself (``flock``): no file is
    added to it, and the kernel releases it when the process ends, however it ends.
    """
    try:
        os.makedirs(directory, exist_ok=True)
        real = os.path.realpath(directory)
        if real in _locks:
            return  # this process holds it already (the command's check, then the spider)
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise ConfigError("JOBDIR", f"cannot open {directory!r}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(
            "JOBDIR", f"{directory!r} is in use by another crawl; give each crawl its own JOBDIR"
        ) from None
    _locks[real] = fd


def open_job(directory: str, config: TraverseConfig, seeds: list[Seed] | None) -> Job:
    """Check ``directory`` against this run; nothing is written here.

    Every refusal is a ``ConfigError`` naming ``JOBDIR`` (exit 2), and nothing in the
    directory is written before all checks pass.
    """
    journal = _checked.pop(directory, None) or FileJournal(directory)
    where = journal.path
    if not journal.exists() and os.path.islink(where):  # not "no journal": a dangling link
        raise ConfigError(
            "JOBDIR", f"{where} is a symbolic link to {os.readlink(where)!r}, which does not "
            "exist; point it at the crawl's journal (a mounted volume?), or remove the link "
            "to start a new crawl in this JOBDIR"
        )  # fmt: skip
    if not journal.exists():
        _check_empty(directory)
        records: list[dict[str, Any]] = []
    else:
        try:
            records = journal.records()
        except JournalError as exc:
            raise ConfigError("JOBDIR", f"{exc.path} {exc.problem}") from None
    budgets = jobstate.Budgets(config.max_pages, config.max_depth)
    plan = jobstate.plan(
        records, where, seeds, config.mode, config.store, budgets, policy_settings(config)
    )
    return Job(directory, plan.seeds, records, journal, plan.append)


_checked: dict[str, FileJournal] = {}  # JOBDIR -> its journal, read by the command's check


def _check_empty(directory: str) -> None:
    """A directory without our journal must be empty: never write into another program's."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError("JOBDIR", f"cannot read {directory!r}: {exc.strerror or exc}") from None
    if names:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise ConfigError(
            "JOBDIR", f"{directory!r} holds no {JOURNAL_NAME} but other files ({shown}); "
            "give a new or empty directory"
        )  # fmt: skip


class JournalPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not jobdir_path(crawler.settings):
            raise NotConfigured
        self.crawler = crawler
        self.loop = LoopingCall(self._sync)
        self.syncing: Deferred[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JournalPipeline:
        return cls(crawler)

    @property
    def job(self) -> Job | None:
        return getattr(self.crawler.spider, "job", None)

    def open_spider(self) -> None:
        self.loop.start(SYNC_INTERVAL, now=False)

    async def close_spider(self) -> None:
        if self.loop.running:
            self.loop.stop()
        if self.syncing is not None:  # never close the file under a running fsync
            await maybe_deferred_to_future(self.syncing)
        job = self.job
        if job is not None:
            try:
                job.journal.close()
            except OSError as exc:
                job.error(exc)

    def hard_stop(self, reason: str) -> None:
        """A second signal: make what was kept durable before the process ends."""
        if self.loop.running:
            self.loop.stop()
        job = self.job
        if job is not None and not job.failed:
            try:
                job.journal.sync()
            except OSError as exc:
                job.error(exc)

    def process_item(self, item: Any) -> Any:
        job = self.job
        if job is None or not isinstance(item, PageItem) or item.outcome is None:
            return item
        spider: Any = self.crawler.spider  # the traverse spider: it has the JOBDIR's job
        store_warning = spider.frontiers.by_key[item.seed_key].store_warnings.get(item.index)
        job.keep(
            jobstate.page_record(item.seed_key, item.index, (item["url"], item["depth"]),
                                 item.outcome, store_warning)
        )  # fmt: skip
        item.outcome = None
        return item

    def _sync(self) -> Deferred[None] | None:
        job = self.job
        if job is None or job.failed:
            return None
        self.syncing = deferToThread(job.journal.sync)
        self.syncing.addErrback(self._sync_failed)
        self.syncing.addBoth(self._synced)
        return self.syncing

    def _sync_failed(self, failure: Failure) -> None:
        if self.job is not None:
            self.job.error(failure.value or OSError("fsync failed"))

    def _synced(self, _: Any) -> None:
        self.syncing = None
