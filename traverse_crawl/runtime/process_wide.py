"""A process-wide setting that a crawl changes while it runs, shared by the crawls of a process.

The interpreter's garbage collector (``heap_extension.py``) and the root logger
(``log_level_extension.py``) belong to the process, not to one crawl: with crawls side
by side in one process, the first to open applies the change and the last to close
undoes it, so a process that runs another crawl afterwards finds them as they were.
"""

from __future__ import annotations

from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler


class ProcessWide:
    """Subclasses implement ``apply`` (first crawl opened) and ``undo`` (last one closed)."""

    running = 0  # crawls of this process with the extension open; per subclass once written

    def __init__(self) -> None:
        self.opened_here = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        extension = cls()
        crawler.signals.connect(extension.opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    @classmethod
    def apply(cls) -> None:
        raise NotImplementedError

    @classmethod
    def undo(cls) -> None:
        raise NotImplementedError

    def opened(self) -> None:
        if self.opened_here:
            return
        self.opened_here = True
        cls = type(self)
        cls.running += 1
        if cls.running == 1:
            cls.apply()

    def closed(self) -> None:
        if not self.opened_here:
            return
        self.opened_here = False
        cls = type(self)
        cls.running -= 1
        if cls.running == 0:
            cls.undo()
