"""Extraction in a crawl (``TRAVERSE_EXTRACT``): each page as it is recorded, each items
file once its seed's manifest is written (docs/extraction.md).

The traverse spider hands every ``html`` snapshot here before it records the page:
extraction runs in a process of its own (``extraction/process.py``; with
``TRAVERSE_EXTRACT_PROCESS = False``, or once that process is gone, in one worker
thread), so neither a huge page nor a slow regular expression (bounded by
``TRAVERSE_EXTRACT_TIMEOUT``) holds the reactor. The page's lines wait in a spool
file (``crawl/spool.py``), keyed by page id and ``sourceRef``.
When a seed's manifest is written (the ``manifest_written`` signal: once per seed,
with ``JOBDIR`` and ``REDIS_URL`` too), its items file is written from it, in the
extraction thread (the reactor goes on meanwhile; the crawl's close waits), in the
manifest's page order: the lines kept here, and for a page this process did not
extract (recorded before a resume, or by another worker) the snapshot re-extracted
from the store. Same snapshots and rules, same bytes, whatever the concurrency.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from scrapy import signals
from scrapy.crawler import Crawler

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.errors import ConfigError
from traverse_crawl.extraction.extractor import (
    Extraction,
    Extractor,
    encode_items,
    failed_warning,
    timeout_warning,
)
from traverse_crawl.extraction.from_store import page_key, seed_chunks
from traverse_crawl.extraction.items import ExtractedItem, items_path, write_items_file
from traverse_crawl.extraction.process import OVERDUE, ExtractionProcess, overdue_after
from traverse_crawl.extraction.process_child import Answer
from traverse_crawl.extraction.setting import EXTRACT_SETTING
from traverse_crawl.manifests.read import read_bytes
from traverse_crawl.signals import manifest_written
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import open_snapshot_store, shown_name
from traverse_crawl.stats import inc, inc_lost
from traverse_crawl.storage.location import is_bucket_url, open_location, spool_directory
from traverse_crawl.utils.child_process import exit_description

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 3


class UnreadableManifest(Exception):
    """The seed's manifest, just written, could not be read back for its items file."""


class SpiderExtraction:
    def __init__(self, crawler: Crawler, config: TraverseConfig) -> None:
        rules = EXTRACT_SETTING.of(config)
        assert rules is not None
        self.crawler = crawler
        self.rules = rules
        self.extractor = Extractor(
            rules,
            config.max_items_per_page,
            config.extract_timeout,
            config.max_item_bytes_per_page,
        )
        self.directory = config.items_dir
        self.settings = crawler.settings
        # A directory, or s3://BUCKET/PREFIX (storage/location.py), checked at start.
        self.location = open_location("TRAVERSE_ITEMS_DIR", self.directory, crawler.settings)
        if is_bucket_url(self.directory):
            self.location.check("TRAVERSE_ITEMS_DIR")
        else:
            try:
                os.makedirs(self.directory, exist_ok=True)
            except OSError as exc:
                raise ConfigError(
                    "TRAVERSE_ITEMS_DIR",
                    f"cannot create {self.directory!r}: {exc.strerror or exc}",
                ) from None
        self.store = (
            open_snapshot_store(config.store, crawler.settings) if config.mode != "live" else None
        )
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="traverse-extract")
        self.config = config
        self.process: ExtractionProcess | None = None
        self.retired: list[ExtractionProcess] = []  # killed for a page past the bound
        self.process_lost_logged = False
        if config.extract_process and rules.raw:
            # Started with the crawler: its start-up (an interpreter, lxml and the rules,
            # about 0.1 s) runs beside Scrapy's, on the other core.
            self._start_process()
        self.spool = Spool(spool_directory(self.directory))
        self.kept: dict[bytes, tuple[int, int] | bytes] = {}
        self.pending: set[asyncio.Future[dict[str, int]]] = set()  # items files being written
        # Each seed's items file handed over: True once written (``TRAVERSE_CHECKS`` waits).
        self.written: dict[str, asyncio.Future[bool]] = {}
        crawler.signals.connect(self.on_manifest_written, signal=manifest_written)
        crawler.signals.connect(self.on_spider_closed, signal=signals.spider_closed)
        # After spider_closed, whose handlers write the manifests of seeds left open.
        crawler.signals.connect(self.on_engine_stopped, signal=signals.engine_stopped)

    def _start_process(self) -> None:
        config = self.config
        timeout = config.extract_timeout
        # If no process can be had, it ends at once: every page is extracted here.
        self.process = ExtractionProcess(
            asyncio.get_event_loop(),
            self.rules,
            config.max_items_per_page,
            timeout,
            overdue_after=overdue_after(timeout),
            on_overdue=self._replace_process,
            max_item_bytes=config.max_item_bytes_per_page,
        )

    def _replace_process(self) -> None:
        """The process was killed for a page past the hard bound: another takes the
        pages after it."""
        if self.process is not None:
            self.retired.append(self.process)
        inc(self.crawler.stats, "extraction/process_restarts")
        self._start_process()

    async def _in_process(
        self, snapshot: Snapshot, page_id: str, page_url: str, source_ref: str, seed_url: str
    ) -> Answer | str | None:
        """The extraction process's answer, ``OVERDUE``, or None: extract it here."""
        found: Answer | str | None = None
        for _attempt in range(3):
            process = self.process
            if process is None or not process.alive:
                break
            found = await process.extract(
                snapshot["body"], snapshot["url"], page_url, page_id, source_ref, seed_url
            )
            # Killed for another page past the bound: this one goes to its replacement.
            if found is not None or not process.overdue:
                break
        return found

    async def extract(
        self, snapshot: Snapshot, page_id: str, page_url: str, source_ref: str, seed_url: str
    ) -> Extraction:
        """The page's items and warnings, computed in the extraction process, or in the
        extraction thread when the process did not extract the page."""
        extraction: Extraction | None = None
        process = self.process
        if process is not None:
            found = await self._in_process(snapshot, page_id, page_url, source_ref, seed_url)
            if found == OVERDUE:
                inc(self.crawler.stats, "extraction/overdue_pages")
                extraction = Extraction([], [timeout_warning(self.config.extract_timeout)])
                lines = b""
            elif isinstance(found, tuple):
                lines, items, warnings = found
                extraction = Extraction([ExtractedItem(item) for item in items], warnings)
            elif process.lost and not self.process_lost_logged:
                self.process_lost_logged = True
                inc(self.crawler.stats, "extraction/process_lost")
                if process.child.start_error is not None:
                    logger.warning(
                        "extraction: the extraction process did not start (%s); extracting "
                        "in the crawl process", process.child.start_error,
                    )  # fmt: skip
                else:
                    logger.warning(
                        "extraction: the extraction process ended before the crawl (%s); the "
                        "pages left are extracted in the crawl process",
                        exit_description(process.child.returncode),
                    )
        if extraction is None:
            job = partial(
                self.extractor.extract,
                snapshot["body"],
                snapshot["url"],
                page_url=page_url,
                page_id=page_id,
                source_ref=source_ref,
                seed_url=seed_url,
            )
            try:
                extraction = await asyncio.get_running_loop().run_in_executor(self.executor, job)
                lines = encode_items(extraction)
            except Exception as exc:  # never a page lost to its extraction: it is recorded
                logger.warning("extraction: %s: %s", page_url, exc)
                extraction = Extraction([], [failed_warning(f"{type(exc).__name__}: {exc}"[:200])])
                lines = b""
        self._keep(page_id, source_ref, lines)
        stats = self.crawler.stats
        inc(stats, "extraction/pages")
        if extraction.items:
            inc(stats, "extraction/items", len(extraction.items))
        if extraction.warnings:
            inc(stats, "extraction/page_warnings")
        return extraction

    def _keep(self, page_id: str, source_ref: str, lines: bytes) -> None:
        key = page_key(page_id, source_ref)
        if not lines:
            self.kept[key] = (0, 0)
            return
        chunk = self.spool.write(lines)
        self.kept[key] = lines if chunk is None else chunk

    def _cached(self, page_id: str, source_ref: str) -> bytes | None:
        kept = self.kept.get(page_key(page_id, source_ref))
        if kept is None or isinstance(kept, bytes):
            return kept
        offset, length = kept
        return self.spool.read(offset, length) if length else b""

    def on_manifest_written(self, seed_id: str, path: str) -> asyncio.Future[bool]:
        """Hand the seed's items file to the extraction thread; the future it returns is
        True once the file is written, False once its loss is logged. The distributed
        worker awaits it (``send_catch_log_async``) before it tells Redis the seed is
        done, so a worker killed in between, or one that could not write the file,
        leaves the seed to another worker, items file included."""
        target = items_path(self.directory, seed_id)
        shown = shown_name(target, seed_id)
        # In the extraction thread (the pages this process did not extract are
        # extracted there too, never by two threads at once), and never waited for by
        # the reactor: the thread may be busy with a slow page of another seed, for up
        # to TRAVERSE_EXTRACT_TIMEOUT, and the manifest may be an object in a bucket.
        # The crawl's close waits for it (``drain``).
        loop = asyncio.get_running_loop()
        job = partial(self._write, path, target)
        future = loop.run_in_executor(self.executor, job)
        done: asyncio.Future[bool] = loop.create_future()
        future.add_done_callback(partial(self._written, seed_id, shown, done))
        self.pending.add(future)
        self.written[seed_id] = done
        return done

    def _write(self, path: str, target: str) -> dict[str, int]:
        """In the extraction thread: the items file from the manifest at ``path``, its
        counts; ``UnreadableManifest``, or the last write error after WRITE_ATTEMPTS.
        Stats and logs are the reactor's (``_written``)."""
        try:
            data = read_bytes(path, self.settings)
            if data is None:
                raise FileNotFoundError(f"{path} is not there")
            manifest = json.loads(data)
        except (OSError, ValueError) as exc:
            raise UnreadableManifest(str(exc)) from None
        error: OSError | None = None
        for _attempt in range(WRITE_ATTEMPTS):
            counts: dict[str, int] = {}
            try:
                write_items_file(
                    target,
                    seed_chunks(self.extractor, self.store, manifest, self._cached, counts),
                    self.location,
                )
            except OSError as exc:
                error = exc
            else:
                return counts
        assert error is not None
        raise error

    def _written(
        self,
        seed_id: str,
        shown: str,
        done: asyncio.Future[bool],
        future: asyncio.Future[dict[str, int]],
    ) -> None:
        self.pending.discard(future)
        if future.cancelled():
            error: BaseException | None = RuntimeError("the crawl stopped first")
        else:
            error = future.exception()
        if not done.done():
            done.set_result(error is None)
        if isinstance(error, UnreadableManifest):
            inc_lost(self.crawler.stats, "extraction/items_file_error")
            logger.error("cannot read the manifest of seed %r back (%s): its items file %s "
                         "is not written", seed_id, error, shown)  # fmt: skip
            return
        if error is not None:
            inc_lost(self.crawler.stats, "extraction/items_file_error")  # the crawl exits 1
            logger.error("could not write the items file %s (%s): the items of seed %r are "
                         "lost", shown, error, seed_id)  # fmt: skip
            return
        counts = future.result()
        inc(self.crawler.stats, "extraction/items_files")
        logger.info(
            "items for seed %r: %s (%d item(s) from %d page(s))",
            seed_id, shown, counts["items"], counts["pages"],
            extra={"seed": seed_id},
        )  # fmt: skip

    async def drain(self) -> None:
        """Until every items file handed to the thread is written. One loop turn
        first: the spider_closed handlers that write the last manifests (and so hand
        over their items files) run after this one has been called."""
        await asyncio.sleep(0)
        while self.pending:
            await asyncio.wait(list(self.pending))
            await asyncio.sleep(0)  # the done callbacks (``_written``) have run

    async def on_spider_closed(self) -> None:
        # Before the stats are closed: a lost items file counts in the exit status.
        await self.drain()

    async def on_engine_stopped(self) -> None:
        await self.drain()
        process, self.process = self.process, None
        for retired in self.retired:
            await retired.reap(timeout=1.0)  # killed already
        if process is not None:
            # Every page's answer is in: the crawl awaited each one.
            cpu = await process.reap()
            if cpu is not None:
                logger.info(
                    "extraction process: %d page(s) extracted, %.2f s of CPU", process.asked, cpu
                )
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.spool.close()
