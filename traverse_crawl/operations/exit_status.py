"""Exit status 1 when something was lost, for any spider of a project with the add-on.

What a crawl could not keep for good (a manifest, a JOBDIR or Redis commit, a snapshot)
is counted in ``traverse/lost``; a feed (an items file) Scrapy could not store, in
Scrapy's ``feedexport/failed_count/*``. The table of exit statuses is in
docs/operations.md ("Exit status").
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Mapping
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

from traverse_crawl.stats import LOST

logger = logging.getLogger(__name__)

FEED_FAILED = "feedexport/failed_count/"

OK = 0
LOST_STATUS = 1
USAGE = 2  # Scrapy's own status for an invalid command line (scrapy/cmdline.py)


def lost_count(stats: Mapping[str, Any]) -> int:
    """How many results the crawl could not keep: its own and the feeds'."""
    feeds = sum(v for k, v in stats.items() if k.startswith(FEED_FAILED) and isinstance(v, int))
    return int(stats.get(LOST) or 0) + feeds


def running_process() -> Any:
    """The Scrapy process whose handler takes SIGTERM now (None: no such process)."""
    handler = signal.getsignal(signal.SIGTERM)
    # A bound method of the process (Scrapy's own handler), or traverse's two-signal
    # stop, which names the process it was installed into (crawl/stop.py).
    process = getattr(handler, "__self__", None) or getattr(handler, "process", None)
    return process if hasattr(process, "bootstrap_failed") else None


class LostResultsExitStatus:
    """Extension: a crawl that lost something ends the ``scrapy crawl`` process with 1.

    Scrapy's crawl command exits 1 when its process says a crawl failed
    (``bootstrap_failed``); that is the one place a component can set the status.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.process: Any = None
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LostResultsExitStatus:
        return cls(crawler)

    def engine_started(self) -> None:
        self.process = running_process()

    def engine_stopped(self) -> None:
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        lost = lost_count(stats)
        if not lost:
            return
        logger.error("%d result(s) could not be written for good: exit status 1", lost)
        process = self.process or running_process()
        if process is not None:
            process.bootstrap_failed = True
