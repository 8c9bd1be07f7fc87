"""No password in any log line: URL userinfo masked in every record and every line printed.

Two layers, so it holds for any handler and any format (text or ``TRAVERSE_LOG_FORMAT=json``):
a log record factory masks each record's message and traceback for every logger and
handler (Scrapy's "Scraped from" item dumps and "Overridden settings" included, a test's
capture too), and every formatter Scrapy builds for its root handler masks the whole
line it formats, so fields taken from a record's ``extra`` or arguments (a JSON line's
``seed`` and ``url``) are masked too.

No object-store credential either: botocore's loggers that dump what a request carries
(its headers with the session token and the signature, the canonical request, a response
body that may hold temporary credentials) give nothing below INFO, whatever ``LOG_LEVEL``
says; and both layers mask a session token or a signature in any line that shows one.
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
# botocore's loggers whose DEBUG lines show a request's headers or signing steps
# ("Sending http request", CanonicalRequest, StringToSign, Signature) or a response's
# headers and body (temporary credentials from STS or the instance metadata service).
QUIET_BELOW_INFO = ("botocore.auth", "botocore.endpoint", "botocore.parsers", "botocore.utils")
# An object store's secrets wherever a line shows one: the session token (a header, a
# canonical request's line, a presigned URL's query, an STS answer's ``SessionToken``),
# a secret access key by its name, and a request's signature.
_SIGNED = re.compile(
    r"(?P<name>(?:security[-_]?token|session[-_]?token|secret[-_]?access[-_]?key|signature)"
    r"['\"]?\s*[:=>]\s*b?['\"]?)(?P<value>[A-Za-z0-9+/=%_.\-]{8,})",
    re.IGNORECASE,
)


class _BelowInfo(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO


def redact_credentials(text: str) -> str:
    """``text`` with every session token and request signature in it masked."""
    low = text.lower()
    if "token" not in low and "signature" not in low and "secret" not in low:
        return text  # the common case
    return _SIGNED.sub(r"\g<name>***", text)


def install() -> None:
    """Both layers, once each; call again after anything that rewraps Scrapy's formatter."""
    for name in QUIET_BELOW_INFO:
        quiet = logging.getLogger(name)
        if not any(isinstance(f, _BelowInfo) for f in quiet.filters):
            # A filter, not a level: it holds whatever level is set on the logger later.
            quiet.addFilter(_BelowInfo())
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
        line = redact_credentials(redact_text(self.inner.format(record)))
        return escape_line_controls(line)


def redact_record(record: logging.LogRecord) -> None:
    """Mask userinfo in the record's message and traceback, in place.

    A changed message is kept formatted; mapping arguments stay (a formatter may read
    what a line is about from them), with the text's "%" escaped so it formats as is.
    """
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it when the line is emitted
        return
    redacted = redact_credentials(redact_text(message))
    if message.startswith(_SETTINGS_LINE):  # once per crawl: the cost stays off other lines
        redacted = _SECRET_SETTING.sub(r"\1'***'", redacted)
    if redacted != message:
        if isinstance(record.args, dict):
            record.msg = redacted.replace("%", "%%")
        else:
            record.msg, record.args = redacted, ()
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        cleaned = redact_credentials(redact_text(text))
        if cleaned != text:
            record.exc_text = cleaned
