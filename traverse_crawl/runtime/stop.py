"""Prompt stops: what the first and the second SIGINT/SIGTERM do (docs/architecture.md, "Stopping").

Scrapy's first signal waits for every request already handed to the downloader,
those queued behind ``TRAVERSE_MIN_DELAY`` or a backoff included, and its second
stops the reactor before any manifest is written. Here the first takes the waiting
requests back unsent, and the second writes every unfinished seed's manifest before
the reactor stops. The ``TwoSignalStop`` extension (installed by ``traverse_crawl.Addon``)
wires this into the process that runs the crawl, whichever command started it;
``install(process)`` does it for a given ``CrawlerProcess``.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.ossignal import install_shutdown_handlers, signal_names

from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

PIPELINE_GRACE = 10.0  # seconds the second signal waits for items already in the pipelines


class CrawlStopped(IgnoreRequest):
    """The crawl is stopping: this request was never sent."""


_STOPPING = "_traverse_stopping"


def stopping(crawler: Crawler) -> bool:
    """Whether a stop signal came: then no page request may start."""
    return bool(getattr(crawler, _STOPPING, False))


def take_back_queued(crawler: Crawler) -> int:
    """Mark the crawl as stopping; fail every request waiting in a download slot
    with ``CrawlStopped``."""
    setattr(crawler, _STOPPING, True)
    engine = crawler.engine
    if engine is None:
        return 0
    taken = 0
    for slot in list(engine.downloader.slots.values()):
        while slot.queue:
            request, deferred = slot.queue.popleft()
            deferred.errback(CrawlStopped(f"crawl stopped before {request.url} was sent"))
            taken += 1
    if taken:
        inc(crawler.stats, "shutdown/unsent", taken)
    return taken


def _reactor() -> Any:
    from twisted.internet import reactor  # imported late: importing installs a reactor

    return reactor


def install(process: Any) -> None:
    """Replace the process's signal handlers with the behaviour described above."""
    scrapy_shutdown = process._signal_shutdown
    scrapy_kill = process._signal_kill

    def first(signum: int, frame: Any) -> None:
        scrapy_shutdown(signum, frame)  # installs process._signal_kill (``second``) next
        for crawler in list(process.crawlers):
            _reactor().callFromThread(take_back_queued, crawler)

    def second(signum: int, frame: Any) -> None:
        install_shutdown_handlers(scrapy_kill)
        _reactor().callFromThread(_hard_stop, process, signum)

    first.process = second.process = process  # type: ignore[attr-defined]  # operations/
    process._signal_shutdown = first
    process._signal_kill = second


def _hard_stop(process: Any, signum: int) -> None:
    logger.warning(
        "Received %s twice, abandoning the downloads in flight; writing the manifests "
        "(send it again to stop at once)",
        signal_names.get(signum, signum),
    )
    deadline = time.monotonic() + PIPELINE_GRACE
    _wait_for_pipelines(process, deadline)


def _wait_for_pipelines(process: Any, deadline: float) -> None:
    busy = [c for c in process.crawlers if _items_in_pipelines(c) and time.monotonic() < deadline]
    if busy:
        _reactor().callLater(0.05, _wait_for_pipelines, process, deadline)
        return
    for crawler in list(process.crawlers):
        for pipeline in _pipelines(crawler):
            hard_stop = getattr(pipeline, "hard_stop", None)
            if hard_stop is not None:
                hard_stop("shutdown")
    process._stop_reactor()


def _items_in_pipelines(crawler: Crawler) -> bool:
    engine = crawler.engine
    slot = getattr(getattr(engine, "scraper", None), "slot", None)
    return bool(slot is not None and slot.itemproc_size)


def _pipelines(crawler: Crawler) -> list[Any]:
    engine = crawler.engine
    itemproc = getattr(getattr(engine, "scraper", None), "itemproc", None)
    return list(getattr(itemproc, "middlewares", ()))


def install_in_running_process() -> bool:
    """``install`` into the Scrapy process whose shutdown handler takes SIGTERM now.

    False, changing nothing, when no Scrapy process handles the signals (a
    ``CrawlerRunner`` in the user's own reactor, a reactorless crawl) or when the
    stop is installed already.
    """
    handler = signal.getsignal(signal.SIGTERM)
    process = getattr(handler, "__self__", None)
    if (
        process is None
        or handler != getattr(process, "_signal_shutdown", None)
        or not hasattr(process, "_signal_kill")
        or not hasattr(process, "_stop_reactor")
    ):
        return False
    install(process)
    install_shutdown_handlers(process._signal_shutdown)
    return True


class TwoSignalStop:
    """Extension: the stop described above, for any spider of a project with the add-on.

    The process installs its signal handlers when the reactor starts, before the
    engine does: at ``engine_started`` they are there to be wrapped.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TwoSignalStop:
        extension = cls()
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        return extension

    def engine_started(self) -> None:
        install_in_running_process()
