"""``TRAVERSE_LOG_FORMAT=json``: every log line on stderr is one JSON object (docs/monitoring.md,
"JSON logs").

``JsonFormatter`` writes ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message``,
``seed`` and ``url`` when the record is about one page, and ``exc`` (the traceback) for
a record with an exception. ``install`` puts it on the root handler Scrapy builds from
its settings, for the process and for every crawler; ``SeedNames`` lets the formatter
name the seed of a request.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.utils import log as scrapy_log

from traverse_crawl import meta_keys
from traverse_crawl.signals import seed_started

if TYPE_CHECKING:  # every scrapy command imports this module; the frontier is the crawl's
    from traverse_crawl.crawl.frontier import Frontier

SETTING = "TRAVERSE_LOG_FORMAT"

# The names Scrapy's LogFormatter and core give the request or response a line is
# about ("Crawled (200) <GET ...>", "Scraped from <200 ...>", "Error downloading ...").
_SUBJECT_KEYS = ("request", "response", "src")

# seed key (request.meta["traverse_seed"]) -> seed id, for the running crawl(s).
_seed_ids: dict[int, str] = {}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (newlines inside values are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _utc(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": _message(record),
        }
        seed, url = _subject(record)
        if seed is not None:
            line["seed"] = seed
        if url is not None:
            line["url"] = url
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # ASCII only: a lone surrogate in a URL or message still gives a valid line.
        return json.dumps(line, default=str)


def _utc(created: float) -> str:
    seconds = int(created)
    millis = int((created - seconds) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _message(record: logging.LogRecord) -> str:
    try:
        return record.getMessage()
    except Exception:  # arguments that do not fit the format: keep both, as text
        return f"{record.msg!s} {record.args!r}"


def _subject(record: logging.LogRecord) -> tuple[str | None, str | None]:
    """The seed and URL a record is about: its own ``extra``, else what its arguments name."""
    seed = getattr(record, "seed", None)
    url = getattr(record, "url", None)
    args = record.args if isinstance(record.args, dict) else {}
    subject = getattr(record, "request", None)
    if subject is None:
        subject = next((args[k] for k in _SUBJECT_KEYS if k in args), None)
    subject_url = getattr(subject, "url", None)
    if url is None and isinstance(subject_url, str):
        url = subject_url
    if seed is None and subject is not None:
        seed = _seed_of(subject)
    # A page item ("Scraped from <failure>", "Dropped: ..."): its URL and seed.
    item = args.get("item")
    if isinstance(item, dict):
        if url is None and isinstance(item.get("url"), str):
            url = item["url"]
        if seed is None:
            seed = _seed_ids.get(getattr(item, "seed_key", None))  # type: ignore[arg-type]
    return (None if seed is None else str(seed)), (None if url is None else str(url))


def _seed_of(subject: Any) -> str | None:
    request = getattr(subject, "request", subject)  # a response names its request
    meta = getattr(request, "_meta", None)  # Request.meta would create an empty dict
    key = meta.get(meta_keys.SEED) if isinstance(meta, dict) else None
    return _seed_ids.get(key) if isinstance(key, int) else None


def is_json(settings: BaseSettings) -> bool:
    value = settings.get(SETTING)
    return isinstance(value, str) and value == "json"


def install(settings: BaseSettings) -> None:
    """JSON lines for everything logged to Scrapy's root handler, from its first record.

    Called before the process configures logging. Scrapy builds that handler's
    formatter from ``LOG_FORMAT`` and ``LOG_DATEFORMAT`` only, in
    ``scrapy.utils.log._get_formatter``, once for the process and again for every
    crawler (with the crawler's settings): that function is the one place every
    build goes through, so it is wrapped here; a text-mode build gets Scrapy's own.
    """
    if not is_json(settings):
        return
    original: Callable[..., logging.Formatter] = scrapy_log._get_formatter
    if getattr(original, "json_aware", False):
        return

    def get_formatter(handler: logging.Handler, settings: BaseSettings) -> logging.Formatter:
        if is_json(settings):
            return JsonFormatter()
        return original(handler, settings)

    get_formatter.json_aware = True  # type: ignore[attr-defined]
    scrapy_log._get_formatter = get_formatter
    # Warnings go to logging even under ``python -W`` (where Scrapy leaves them on
    # stderr), and an exception nobody caught is one JSON line too.
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def _log_uncaught(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    logging.getLogger("traverse_crawl").critical(
        "unhandled exception: %s", value, exc_info=(kind, value, tb)
    )


def write_error(message: str) -> None:
    """One ERROR line on stderr before any handler exists (a bad command line)."""
    record = logging.LogRecord("traverse_crawl", logging.ERROR, "", 0, message, None, None)
    sys.stderr.write(JsonFormatter().format(record) + "\n")
    sys.stderr.flush()


class SeedNames:
    """Keeps each seed's id, so a line about a request names its seed."""

    def __init__(self, crawler: Crawler) -> None:
        if not is_json(crawler.settings):
            raise NotConfigured
        crawler.signals.connect(self.seed_started, signal=seed_started)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        self.keys: list[int] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SeedNames:
        return cls(crawler)

    def seed_started(self, frontier: Frontier, seed_key: int) -> None:
        _seed_ids[seed_key] = frontier.seed_id
        self.keys.append(seed_key)

    def spider_closed(self) -> None:
        for key in self.keys:
            _seed_ids.pop(key, None)
