"""Write one manifest JSON file per seed, atomically.

A seed's manifest is written once its BFS is finished *and* every one of its page
items has passed the earlier pipelines (so a store failure noted by the snapshot
pipeline is in it); a seed still open when the spider closes is written with what
was recorded and a warning naming the reason (docs/architecture.md, "Stopping").
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, BinaryIO

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet.defer import Deferred

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.crawl.frontiers import Frontiers
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.errors import ConfigError
from traverse_crawl.jobdir.pipeline import jobdir_path
from traverse_crawl.manifests.read import skipped_path
from traverse_crawl.signals import manifest_written, seed_finished, seed_started
from traverse_crawl.snapshots.store import shown_name, source_dir_name
from traverse_crawl.stats import inc, inc_lost
from traverse_crawl.storage.bucket import BucketLocation
from traverse_crawl.storage.location import Location, open_location
from traverse_crawl.utils.atomic import atomic_write

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 3


class ManifestPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if get_config(crawler).redis.url:
            raise NotConfigured  # distributed: written once per seed by distributed/worker.py
        if Frontiers.of(crawler.spider) is None:
            raise NotConfigured  # a spider without seeds (any other spider) has no manifest
        self.crawler = crawler
        self.directory = get_config(crawler).manifest_dir
        self.location = open_location("TRAVERSE_MANIFEST_DIR", self.directory, crawler.settings)
        if isinstance(self.location, BucketLocation):
            self.location.check("TRAVERSE_MANIFEST_DIR")  # once, at start: exit 2
        else:
            try:
                os.makedirs(self.directory, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    "TRAVERSE_MANIFEST_DIR",
                    f"cannot create {self.directory!r}: {exc.strerror or exc}",
                ) from None
        self.processed: dict[int, int] = {}
        self.started: dict[int, Frontier] = {}
        self.finished: dict[int, Frontier] = {}
        self.written: set[int] = set()
        self.spool_failed = False
        # Uploads to a bucket, one at a time, in the order the seeds finish.
        self.uploads = (
            ThreadPoolExecutor(1, thread_name_prefix="traverse-manifest")
            if self.location.remote
            else None
        )
        self.pending: dict[int, tuple[Future[Written], str, Frontier]] = {}
        self.waiting: list[Deferred[None]] = []
        crawler.signals.connect(self.on_seed_started, signal=seed_started)
        crawler.signals.connect(self.on_seed_finished, signal=seed_finished)
        crawler.signals.connect(self.on_spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ManifestPipeline:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, PageItem):
            key = item.seed_key
            self.processed[key] = self.processed.get(key, 0) + 1
            self._check_spool()
            self._maybe_write(key)
        return item

    def on_seed_started(self, frontier: Frontier, seed_key: int) -> None:
        self.started[seed_key] = frontier

    def on_seed_finished(self, frontier: Frontier, seed_key: int) -> None:
        self.finished[seed_key] = frontier
        self._maybe_write(seed_key)

    # Seeds still open when the spider closes (Ctrl-C, CLOSESPIDER_*, an engine error)
    # are written with the stop warning; so are they after a second SIGINT/SIGTERM
    # (``hard_stop``, called by ``runtime/stop.py``).
    def _maybe_write(self, key: int) -> None:
        frontier = self.finished.get(key)
        job = getattr(self.crawler.spider, "job", None)  # a JOBDIR's pages taken, not fetched
        resumed = job.resumed.get(key, 0) if job is not None else 0
        if frontier is not None and self.processed.get(key, 0) + resumed >= len(frontier.pages):
            self.write(key, frontier)

    def _check_spool(self) -> None:
        spool = getattr(self.crawler.spider, "spool", None)
        if spool is not None and spool.failed is not None and not self.spool_failed:
            self.spool_failed = True
            inc(self.crawler.stats, "manifest/spool_error")
            logger.warning(
                "cannot write the page spool in %s (%s); recorded pages stay in memory",
                spool.directory, _reason(spool.failed),
            )  # fmt: skip

    def on_spider_closed(self, spider: Spider, reason: str) -> Deferred[None] | None:
        self.write_open_seeds(reason)
        spool = getattr(spider, "spool", None)
        if not self.pending:
            self._close(spool)
            return None
        # Scrapy waits for this Deferred before engine_stopped (the stats file, the
        # items files): every upload has its outcome by then.
        done: Deferred[None] = Deferred()
        self.waiting.append(done)
        done.addBoth(self._closed, spool)
        return done

    def _closed(self, result: Any, spool: Any) -> Any:
        self._close(spool)
        return result

    def _close(self, spool: Any) -> None:
        if spool is not None:
            spool.close()  # the manifests are streamed from it: only once all are written
        if self.uploads is not None:
            self.uploads.shutdown(wait=False)

    def write_open_seeds(self, reason: str) -> None:
        """Write every seed's manifest not written yet, with the stop warning."""
        for key, frontier in self.started.items():
            if key not in self.written:
                frontier.stop(reason)
                self.write(key, frontier)
                inc(self.crawler.stats, "manifest/partial")

    def hard_stop(self, reason: str) -> None:
        """As ``write_open_seeds``, and wait here for every upload in flight: the reactor
        stops right after this (a second SIGINT/SIGTERM, ``runtime/stop.py``)."""
        self.write_open_seeds(reason)
        for key, (job, _path, _frontier) in list(self.pending.items()):
            wait([job])
            self._uploaded(key)

    def write(self, key: int, frontier: Frontier) -> None:
        if key in self.written:
            return
        self.written.add(key)
        path = manifest_path(self.directory, frontier.seed_id)
        if self.uploads is None:  # a directory: written here, as fast as a local file
            self._finish(path, frontier, write_files(path, frontier, self.location))
            return
        # A bucket: uploaded by a thread of its own, so a slow or absent endpoint (each
        # call retried for TRAVERSE_S3_RETRY) never holds up the crawl's event loop;
        # the outcome (log line, stats, fallback file, signal) is taken on the loop.
        job = self.uploads.submit(write_files, path, frontier, self.location)
        self.pending[key] = (job, path, frontier)
        job.add_done_callback(lambda _: _call_from_thread(self._uploaded, key))

    def _uploaded(self, key: int) -> None:
        entry = self.pending.pop(key, None)
        if entry is None:
            return  # taken already by hard_stop
        job, path, frontier = entry
        try:
            errors = job.result()
        except Exception as exc:  # not the store's OSError: still an outcome, never a hang
            errors = (OSError(f"{type(exc).__name__}: {exc}"), None)
        self._finish(path, frontier, errors)
        if not self.pending:
            waiting, self.waiting = self.waiting, []
            for done in waiting:
                done.callback(None)

    def _finish(self, path: str, frontier: Frontier, errors: Written) -> None:
        error, skipped_error = errors
        if error is not None:
            inc_lost(self.crawler.stats, "manifest/error")
            self._fallback(path, frontier, error)
            return
        logger.info(
            "manifest for seed %r: %s",
            frontier.seed_id,
            shown_manifest_path(self.directory, frontier.seed_id),
            extra={"seed": frontier.seed_id},
        )
        inc(self.crawler.stats, "manifest/written")
        if frontier.skipped is not None:
            if skipped_error is None:
                inc(self.crawler.stats, "manifest/skipped_written")
            else:
                inc_lost(self.crawler.stats, "manifest/skipped_error")  # the crawl exits 1
                logger.error(
                    "could not write %s (%s): the skipped URLs of seed %r are lost",
                    shown_name(skipped_path(path), frontier.seed_id),
                    shown_name(_reason(skipped_error), frontier.seed_id), frontier.seed_id,
                )  # fmt: skip
        self._written(frontier.seed_id, path)

    def _fallback(self, path: str, frontier: Frontier, error: OSError) -> None:
        # A manifest that cannot be written (a full disk, a directory made read-only
        # during the crawl) is kept in a fallback file, in the JOBDIR when there is
        # one, else (or when the JOBDIR cannot take it either: a JOBDIR on the disk
        # that filled) in the system's temporary directory, named in an ERROR line;
        # the ``crawl`` command then exits 1.
        seed_id = frontier.seed_id
        stamp = time.strftime("%Y%m%dT%H%M%S")
        name = f"manifest-{source_dir_name(seed_id)}-{stamp}-{os.getpid()}.json"
        directories = [jobdir_path(self.crawler.settings), tempfile.gettempdir()]
        tried: list[tuple[str, OSError]] = []
        for directory in dict.fromkeys(d for d in directories if d):
            fallback = os.path.join(directory, name)
            try:
                write_manifest(fallback, frontier)
            except OSError as exc:
                tried.append((fallback, exc))
                continue
            break
        else:
            logger.error(
                "could not write manifest %s (%s), nor its fallback %s: "
                "the manifest of seed %r is lost",
                shown_name(path, seed_id), shown_name(_reason(error), seed_id),
                " nor ".join(
                    f"{shown_name(where, seed_id)} ({shown_name(_reason(exc), seed_id)})"
                    for where, exc in tried
                ),
                seed_id,
            )  # fmt: skip
            return
        inc(self.crawler.stats, "manifest/fallback")
        self._written(seed_id, fallback)
        logger.error(
            "could not write manifest %s (%s); its content is in %s",
            shown_name(path, seed_id), shown_name(_reason(error), seed_id),
            shown_name(fallback, seed_id),
        )  # fmt: skip

    def _written(self, seed_id: str, path: str) -> None:
        self.crawler.signals.send_catch_log(manifest_written, seed_id=seed_id, path=path)


def _reason(exc: OSError) -> str:
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)


Written = tuple[OSError | None, OSError | None]  # the manifest's error, its skipped file's


def write_files(path: str, frontier: Frontier, location: Location) -> Written:
    """The seed's manifest, then its skipped file (``TRAVERSE_SKIPPED``) beside it, each
    tried ``WRITE_ATTEMPTS`` times; the last error of each (None: written, or none to
    write). No skipped file is written for a manifest that could not be."""
    error: OSError | None = None
    for _attempt in range(WRITE_ATTEMPTS):
        try:
            write_manifest(path, frontier, location)
        except OSError as exc:
            error = exc
        else:
            break
    else:
        return error, None
    if frontier.skipped is None:
        return None, None
    for _attempt in range(WRITE_ATTEMPTS):
        try:
            write_skipped(path, frontier, location)
        except OSError as exc:
            error = exc
        else:
            return None, None
    return None, error


def _call_from_thread(call: Callable[..., Any], *args: Any) -> None:
    from twisted.internet import reactor

    reactor.callFromThread(call, *args)


def write_manifest(path: str, frontier: Frontier, location: Location | None = None) -> None:
    """The seed's manifest, streamed from its page log, written atomically (in
    ``location``, the manifest directory, under ``path``'s file name, when given).

    The pages wait in the spider's spool (``crawl/spool.py``), not in memory, and are
    streamed into the temporary file that ``utils/atomic.py`` renames into place, so
    nothing but finished manifests ever ends in ``.json`` in the manifest directory.
    """

    def write(handle: BinaryIO) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", write_through=False)
        frontier.write_manifest(text)
        text.flush()
        text.detach()  # atomic_write flushes, fsyncs and closes the file itself

    if location is None:
        atomic_write(path, write)
    else:
        location.write_stream(os.path.basename(path), write)


def write_manifest_once(path: str, frontier: Frontier, location: Location) -> bool:
    """``write_manifest``, unless the manifest directory holds exactly these bytes under
    that name already (a distributed seed's manifest, written by a worker whose task
    another one took over); True when it wrote. The bytes are compared by their hash,
    the new ones streamed from the page log as for the write."""
    existing = location.read(os.path.basename(path))
    if existing is not None:
        digest = hashlib.sha256()
        sink = io.BufferedWriter(_Hashing(digest))
        text = io.TextIOWrapper(sink, encoding="utf-8", write_through=False)
        frontier.write_manifest(text)
        text.flush()  # through the buffer to the hash
        text.detach()
        if digest.digest() == hashlib.sha256(existing).digest():
            return False
    write_manifest(path, frontier, location)
    return True


class _Hashing(io.RawIOBase):
    """A binary sink that only hashes what it is given."""

    def __init__(self, digest: Any) -> None:
        self.digest = digest

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.digest.update(data)
        return len(data)


def write_skipped(path: str, frontier: Frontier, location: Location | None = None) -> None:
    """The seed's links not admitted (``TRAVERSE_SKIPPED``) beside its manifest ``path``,
    written atomically (in ``location``, as ``write_manifest``); nothing when the
    frontier keeps none."""
    log = frontier.skipped
    if log is None:
        return
    target = skipped_path(path)
    if location is None:
        atomic_write(target, lambda out: log.write(out, frontier.seen))
    else:
        location.write_stream(os.path.basename(target), lambda out: log.write(out, frontier.seen))


def manifest_path(directory: str, seed_id: str) -> str:
    """``<store-dir-name of the seed id>.json``: the store's directory naming rule."""
    return os.path.join(directory, source_dir_name(seed_id) + ".json")


def shown_manifest_path(directory: str, seed_id: str) -> str:
    """The manifest's path as printed (``shown_name``)."""
    return shown_name(manifest_path(directory, seed_id), seed_id)
