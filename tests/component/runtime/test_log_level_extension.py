"""Debug records that no handler takes are not built (``runtime/log_level_extension.py``).

Scrapy leaves the root logger at ``NOTSET`` and filters in its handler, so every
``logger.debug`` of a crawl built a record for nothing. The crawl raises the root
logger to what its handlers accept while it runs; what the log shows is unchanged.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator

from scrapy.utils.log import DEFAULT_LOGGING

from traverse_crawl.runtime.log_level_extension import UnhandledRecordsSkipped, lowest_handled_level


@contextlib.contextmanager
def scrapy_like_root() -> Iterator[logging.Logger]:
    """The root logger with one handler at INFO and no level, as Scrapy leaves it
    (pytest's own capturing handlers, which take everything, set aside); restored after."""
    saved_level, saved_handlers = logging.root.level, logging.root.handlers[:]
    logging.root.handlers[:] = [logging.StreamHandler(io.StringIO())]
    logging.root.handlers[0].setLevel(logging.INFO)
    logging.root.setLevel(logging.NOTSET)
    try:
        yield logging.root
    finally:
        logging.root.handlers[:] = saved_handlers
        logging.root.setLevel(saved_level)


def test_crawls_side_by_side_share_the_raised_level():
    with scrapy_like_root() as root_logger:
        first, second = UnhandledRecordsSkipped(), UnhandledRecordsSkipped()
        first.opened()
        assert root_logger.level == logging.INFO
        assert not logging.getLogger("scrapy.core.engine").isEnabledFor(logging.DEBUG)
        second.opened()
        first.closed()
        first.closed()  # a second close of the same crawl changes nothing
        assert root_logger.level == logging.INFO
        second.closed()
        assert root_logger.level == logging.NOTSET
        assert logging.getLogger("scrapy.core.engine").isEnabledFor(logging.DEBUG)


def test_a_handler_that_takes_everything_keeps_every_record():
    """A handler at NOTSET anywhere (pytest's capture, a user's catch-all on a
    logger of its own) means every record is wanted: the root stays as it is."""
    with scrapy_like_root() as root_logger:
        catch_all = logging.StreamHandler(io.StringIO())
        logging.getLogger("traverse_crawl.spider").addHandler(catch_all)
        try:
            assert lowest_handled_level() == logging.NOTSET
            extension = UnhandledRecordsSkipped()
            extension.opened()
            assert root_logger.level == logging.NOTSET
            extension.closed()
            assert root_logger.level == logging.NOTSET
        finally:
            logging.getLogger("traverse_crawl.spider").removeHandler(catch_all)


def test_a_libraries_null_handler_does_not_count():
    with scrapy_like_root():
        logging.getLogger("urllib3").addHandler(silent := logging.NullHandler())
        try:
            assert lowest_handled_level() == logging.INFO
        finally:
            logging.getLogger("urllib3").removeHandler(silent)


def test_scrapys_own_debug_level_is_raised_too():
    """Scrapy's logging configuration sets the "scrapy" logger to DEBUG, so its per-page
    "Crawled (200)" and "Scraped from" records were built under a raised root too."""
    assert DEFAULT_LOGGING["loggers"]["scrapy"]["level"] == "DEBUG"
    scrapy_logger = logging.getLogger("scrapy")
    saved = scrapy_logger.level
    with scrapy_like_root() as root_logger:
        scrapy_logger.setLevel(logging.DEBUG)
        try:
            extension = UnhandledRecordsSkipped()
            extension.opened()
            assert root_logger.level == logging.INFO
            assert not logging.getLogger("scrapy.core.engine").isEnabledFor(logging.DEBUG)
            assert logging.getLogger("scrapy.core.engine").isEnabledFor(logging.INFO)
            extension.closed()
            assert scrapy_logger.level == logging.DEBUG
            assert logging.getLogger("scrapy.core.engine").isEnabledFor(logging.DEBUG)
        finally:
            scrapy_logger.setLevel(saved)


def test_a_root_level_set_by_the_user_is_left_alone():
    with scrapy_like_root() as root_logger:
        root_logger.setLevel(logging.WARNING)
        extension = UnhandledRecordsSkipped()
        extension.opened()
        assert root_logger.level == logging.WARNING
        extension.closed()
        assert root_logger.level == logging.WARNING
