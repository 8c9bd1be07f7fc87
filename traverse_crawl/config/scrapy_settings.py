"""Scrapy's own settings that a traverse crawl relies on, checked at start-up (docs/settings.md).

Scrapy reads these with ``getint``/``getfloat`` when its components start: a value such
as ``DOWNLOAD_MAXSIZE=1e6`` would crash Scrapy with a traceback (``int("1e6")``), and
``CONCURRENT_REQUESTS_PER_DOMAIN=-1`` would never fetch anything. A bad one is a
``ConfigError`` naming the setting and what is accepted, before the crawler starts.
Pure: names and values only, no Scrapy import.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from traverse_crawl.config.table import SettingsLike
from traverse_crawl.errors import ConfigError

# The longest wait any delay setting may ask for: a day. Longer is a typo (or
# 1e308) that would hold a crawl forever.
MAX_SECONDS = 86400.0
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
_INTEGER = re.compile(r"\s*\+?\d+\s*")


def parse_integer(name: str, value: Any, low: int) -> int:
    """An integer as Scrapy's ``getint`` reads it (``int(value)``): no ``1e6``, no ``3.0``."""
    accepted = f"expected a whole number >= {low} written with digits only"
    if isinstance(value, bool) or not (
        isinstance(value, int) or (isinstance(value, str) and _INTEGER.fullmatch(value))
    ):
        raise ConfigError(name, f"{accepted}, got {value!r}")
    number = int(value)
    if number < low:
        raise ConfigError(name, f"{accepted}, got {value!r}")
    return number


def parse_count(name: str, value: Any) -> int:
    """A whole number >= 1 (a concurrency or pool size)."""
    return parse_integer(name, value, 1)


def parse_size(name: str, value: Any) -> int:
    """A whole number >= 0 (a size or a count, 0 often meaning no limit)."""
    return parse_integer(name, value, 0)


def _seconds(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not math.isfinite(number) or number > MAX_SECONDS:
        raise ConfigError(
            name, f"expected a number of seconds up to {MAX_SECONDS:.0f}, got {value!r}"
        )
    return number


def parse_delay(name: str, value: Any) -> float:
    """Seconds up to ``MAX_SECONDS``; a negative delay is 0, as Traverse clamps it."""
    return max(0.0, _seconds(name, value))


def _non_negative_seconds(name: str, value: Any, zero: bool) -> float:
    number = _seconds(name, value)
    if number < 0 or (number == 0 and not zero):
        low = ">= 0" if zero else "> 0"
        accepted = f"expected a number of seconds {low} and up to {MAX_SECONDS:.0f}"
        raise ConfigError(name, f"{accepted}, got {value!r}")
    return number


def parse_timeout(name: str, value: Any) -> float:
    """Seconds, more than 0 and up to ``MAX_SECONDS``."""
    return _non_negative_seconds(name, value, zero=False)


def parse_optional_timeout(name: str, value: Any) -> float:
    """Seconds up to ``MAX_SECONDS``, 0 meaning none (``CLOSESPIDER_TIMEOUT``)."""
    return _non_negative_seconds(name, value, zero=True)


def parse_log_level(name: str, value: Any) -> str | int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.strip().upper() in LOG_LEVELS:
        return value.strip().upper()
    raise ConfigError(name, f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")


# Scrapy settings read by Scrapy's own components during a traverse crawl.
# (DOWNLOAD_TIMEOUT, DOWNLOAD_MAXSIZE, REDIRECT_MAX_TIMES, RETRY_TIMES and
# USER_AGENT are read by traverse too and checked with config/settings.py's table.)
CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "CONCURRENT_REQUESTS": parse_count,
    "CONCURRENT_REQUESTS_PER_DOMAIN": parse_count,
    "CONCURRENT_ITEMS": parse_count,
    "REACTOR_THREADPOOL_MAXSIZE": parse_count,
    "DOWNLOAD_WARNSIZE": parse_size,
    "DNSCACHE_SIZE": parse_count,
    "DNS_TIMEOUT": parse_timeout,
    "CLOSESPIDER_TIMEOUT": parse_optional_timeout,
    "CLOSESPIDER_ITEMCOUNT": parse_size,
    "CLOSESPIDER_PAGECOUNT": parse_size,
    "CLOSESPIDER_ERRORCOUNT": parse_size,
    "LOG_LEVEL": parse_log_level,
}


def check_scrapy_settings(settings: SettingsLike) -> None:
    """Raise ``ConfigError`` for the first Scrapy setting no crawl can run with."""
    for name, parse in CHECKS.items():
        value = settings.get(name)
        if value is not None:
            parse(name, value)
