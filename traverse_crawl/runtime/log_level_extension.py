"""Log records that no handler would take are not built.

When the spider opens, a root logger at ``NOTSET`` is raised to the lowest level that
any handler on any logger accepts, so ``isEnabledFor`` turns a dropped debug call down
before a record exists; the level is put back when the last crawl of the process
closes. A handler added to a logger *after* the spider opened sees only records at or
above that level.
"""

from __future__ import annotations

import logging

from traverse_crawl.runtime.process_wide import ProcessWide


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


# Scrapy's root handler filters by LOG_LEVEL, but ``install_scrapy_root_handler``
# leaves the root *logger* at NOTSET, so every ``logger.debug`` of a crawl (Scrapy's
# "Crawled (200) <GET ...>" for each response and "Scraped from ..." for each item,
# traverse's own per-page lines) builds a LogRecord, and Scrapy's log formatter its
# message arguments, only for the handler to drop it: a few microseconds each, several
# per page, on the reactor's thread. Nothing a handler would have written is lost: a
# logger with a level of its own keeps it, and any handler at NOTSET (pytest's capture,
# a user's catch-all) leaves the root untouched.
class UnhandledRecordsSkipped(ProcessWide):
    saved: int | None = None  # the root logger's level before the first crawl

    @classmethod
    def apply(cls) -> None:
        if logging.root.level != logging.NOTSET:
            return  # a level somebody chose
        level = lowest_handled_level()
        if level > logging.NOTSET:
            cls.saved = logging.root.level
            logging.root.setLevel(level)

    @classmethod
    def undo(cls) -> None:
        if cls.saved is not None:
            logging.root.setLevel(cls.saved)
            cls.saved = None
