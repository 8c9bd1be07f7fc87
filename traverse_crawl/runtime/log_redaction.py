"""No password in any log line: URL userinfo masked in every record and every line printed.

Two layers, so it holds for any handler and any format (text or ``TRAVERSE_LOG_FORMAT=json``):
a log record factory masks each record's message and traceback for every logger and
handler (Scrapy's "Scraped from" item dumps and "Overridden settings" included, a test's
capture too), and every formatter Scrapy builds for its root handler masks the whole
line it formats, so fields taken from a record's ``extra`` or arguments (a JSON line's
``seed`` and ``url``) are masked too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from scrapy.utils import log as scrapy_log

from traverse_crawl.utils.redact import redact_text
from traverse_crawl.utils.terminal import escape_line_controls

_factory: list[Any] = []
# Scrapy logs the settings given on the command line ("Overridden settings: {...}") at
# start: the object store's secret and session token are masked there too.
_SETTINGS_LINE = "Overridden settings"
_SECRET_SETTING = re.compile(r"('AWS_(?:SECRET_ACCESS_KEY|SESSION_TOKEN)': )'[^']*'")


def install() -> None:
    """Both layers, once each; call again after anything that rewraps Scrapy's formatter."""
    if not _factory:
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            redact_record(record)
            return record

        _factory.append(factory)
        logging.setLogRecordFactory(factory)
    current: Callable[..., logging.Formatter] = scrapy_log._get_formatter
    if getattr(current, "redacting", False):
        return

    def get_formatter(handler: logging.Handler, settings: Any) -> logging.Formatter:
        return RedactingFormatter(current(handler, settings))

    # Whatever marks the wrapped function (json_log's "json_aware") stays visible.
    get_formatter.__dict__.update(getattr(current, "__dict__", {}))
    get_formatter.redacting = True  # type: ignore[attr-defined]
    scrapy_log._get_formatter = get_formatter


class RedactingFormatter(logging.Formatter):
    """``inner``'s line with every URL's userinfo masked."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        # Control characters escaped too: a line never moves the cursor or links anywhere.
        return escape_line_controls(redact_text(self.inner.format(record)))


def redact_record(record: logging.LogRecord) -> None:
    """Mask userinfo in the record's message and traceback, in place.

    A changed message is kept formatted; mapping arguments stay (a formatter may read
    what a line is about from them), with the text's "%" escaped so it formats as is.
    """
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it when the line is emitted
        return
    redacted = redact_text(message)
    if message.startswith(_SETTINGS_LINE):  # once per crawl: the cost stays off other lines
        redacted = _SECRET_SETTING.sub(r"\1'***'", redacted)
    if redacted != message:
        if isinstance(record.args, dict):
            record.msg = redacted.replace("%", "%%")
        else:
            record.msg, record.args = redacted, ()
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        cleaned = redact_text(text)
        if cleaned != text:
            record.exc_text = cleaned
