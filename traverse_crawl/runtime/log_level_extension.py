"""Log records that no handler would take are not built.

When the spider opens, a root logger at ``NOTSET``, and any logger set below it (Scrapy
sets "scrapy" to DEBUG), is raised to the lowest level that any handler on any logger
accepts, so ``isEnabledFor`` turns a dropped debug call down before a record exists;
the levels are put back when the last crawl of the process closes. A handler added to
a logger *after* the spider opened sees only records at or above that level.
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
# leaves the root *logger* at NOTSET, and Scrapy's DEFAULT_LOGGING sets the "scrapy"
# logger to DEBUG, so every ``logger.debug`` of a crawl (Scrapy's "Crawled (200) <GET
# ...>" for each response and "Scraped from ..." for each item, traverse's own per-page
# lines) builds a LogRecord, and the redaction its masked copy, only for the handler to
# drop it: a few microseconds each, several per page, on the reactor's thread. The root
# and every logger with a level below the lowest handled one are raised to it. Nothing a
# handler would have written is lost: no handler takes a record below that level, a
# logger with a higher level of its own keeps it, a root level somebody chose is left
# alone, and any handler at NOTSET (pytest's capture, a user's catch-all) leaves every
# level untouched.
class UnhandledRecordsSkipped(ProcessWide):
    saved: dict[logging.Logger, int] = {}  # the loggers raised, and their levels before

    @classmethod
    def apply(cls) -> None:
        level = lowest_handled_level()
        if level == logging.NOTSET:
            return
        raised: list[logging.Logger] = (
            [logging.root] if logging.root.level == logging.NOTSET else []
        )
        raised += [
            logger
            for logger in list(logging.Logger.manager.loggerDict.values())
            if isinstance(logger, logging.Logger) and logging.NOTSET < logger.level < level
        ]
        cls.saved = {logger: logger.level for logger in raised}
        for logger in raised:
            logger.setLevel(level)

    @classmethod
    def undo(cls) -> None:
        for logger, level in cls.saved.items():
            logger.setLevel(level)
        cls.saved = {}
