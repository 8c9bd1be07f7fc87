"""No password in any log line: every log record of the process has URL userinfo masked.

A log record factory, not a handler's filter or formatter, so it holds whatever handler
and format print the line (Scrapy's, a JSON one, a test's capture) and for every logger,
Scrapy's own "Scraped from" item dumps and "Overridden settings" included.
"""

from __future__ import annotations

import logging
from typing import Any

from traverse_crawl.utils.redact import redact_text

_installed: list[Any] = []


def install() -> None:
    """Wrap the process's log record factory (once; a later call does nothing)."""
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        redact_record(record)
        return record

    _installed.append(factory)
    logging.setLogRecordFactory(factory)


def redact_record(record: logging.LogRecord) -> None:
    """Mask userinfo in the record's message and traceback, in place. The message is
    formatted only when it changes (then kept formatted, with no arguments)."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it when the line is emitted
        return
    redacted = redact_text(message)
    if redacted != message:
        record.msg, record.args = redacted, ()
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        cleaned = redact_text(text)
        if cleaned != text:
            record.exc_text = cleaned
