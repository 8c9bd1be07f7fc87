"""Log records that no handler would take are not built (issue 17).

Scrapy's root handler filters by ``LOG_LEVEL``, but ``install_scrapy_root_handler``
leaves the root *logger* at ``NOTSET``, so every ``logger.debug`` of a crawl —
Scrapy's "Crawled (200) <GET ...>" for each response and "Scraped from ..." for
each item, traverse's own per-page lines — builds a ``LogRecord`` (and Scrapy's
log formatter builds its message arguments) only for the handler to drop it:
a few microseconds each, several per page, on the reactor's thread.

When the spider opens, if the root logger is at ``NOTSET``, it is raised to the
lowest level that any handler on any logger accepts (with ``LOG_LEVEL=INFO``
and no other handler: ``INFO``), so ``isEnabledFor`` turns the call down before
a record exists. Nothing a handler would have written is lost: a logger with a
level of its own keeps it, and any handler at ``NOTSET`` (pytest's capture, a
user's catch-all) leaves the root untouched. The level is put back when the last
crawl of the process closes. A handler added to a logger *after* the spider
opened sees only records at or above that level.
"""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.crawler import Crawler


def lowest_handled_level() -> int:
    """The lowest level that a handler anywhere in the logging tree accepts (0: any).

    A ``NullHandler`` takes nothing: libraries add one (at ``NOTSET``) so that their
    records are not printed by default, and it is left out.
    """
    loggers = [logging.root, *logging.Logger.manager.loggerDict.values()]
    levels = [
        handler.level
        for logger in loggers
        if isinstance(logger, logging.Logger)  # not the tree's PlaceHolders
        for handler in logger.handlers
        if not isinstance(handler, logging.NullHandler)
    ]
    return min(levels, default=logging.NOTSET)


class UnhandledRecordsSkipped:
    # Crawls running in one process share the root logger: the first to open
    # raises it, the last to close puts it back.
    running = 0
    saved: int | None = None

    def __init__(self) -> None:
        self.opened_here = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnhandledRecordsSkipped:
        extension = cls()
        crawler.signals.connect(extension.opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    def opened(self) -> None:
        if self.opened_here:
            return
        self.opened_here = True
        cls = type(self)
        cls.running += 1
        if cls.running > 1 or logging.root.level != logging.NOTSET:
            return
        level = lowest_handled_level()
        if level > logging.NOTSET:
            cls.saved = logging.root.level
            logging.root.setLevel(level)

    def closed(self) -> None:
        if not self.opened_here:
            return
        self.opened_here = False
        cls = type(self)
        cls.running -= 1
        if cls.running == 0 and cls.saved is not None:
            logging.root.setLevel(cls.saved)
            cls.saved = None
