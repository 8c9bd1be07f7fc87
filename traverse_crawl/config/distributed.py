"""Settings of a distributed crawl (docs/settings.md), parsed and checked at start-up.

``REDIS_URL`` and ``REDIS_PARAMS`` are scrapy-redis's setting names, so a user
who knows scrapy-redis configures the connection the same way; ``REDIS_URL``
set switches the crawl to Redis. The ``TRAVERSE_*`` ones name the crawl and
bound its waits. Pure: names and values only, no Scrapy or Redis import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from traverse_crawl.config.scrapy_settings import parse_optional_timeout, parse_timeout
from traverse_crawl.config.table import SettingsLike, own_settings, read_settings, setting
from traverse_crawl.errors import ConfigError
from traverse_crawl.utils.redact import redact_url

# A crawl id becomes part of every key (``traverse:<crawl id>:...``): printable,
# no whitespace, no ``*?[]`` (they would turn a key listing into a pattern).
_CRAWL_ID = re.compile(r"[A-Za-z0-9._@%+=,/-]{1,200}")
URL_SCHEMES = ("redis", "rediss", "unix")
MIN_LEASE = 0.5  # seconds: below it, a busy worker could not renew its leases in time


def parse_redis_url(name: str, value: Any) -> str:
    text = "" if value is None else str(value).strip()
    if text and urlsplit(text).scheme not in URL_SCHEMES:
        accepted = ", ".join(f"{s}://" for s in URL_SCHEMES)
        shown = redact_url(text)
        raise ConfigError(name, f"expected a URL starting with {accepted}, got {shown!r}")
    return text


def parse_redis_params(name: str, value: Any) -> dict[str, Any]:
    """A dict (settings.py) or a JSON object (``-s``), of redis-py connection arguments."""
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            raise ConfigError(name, f"expected a JSON object, got {value!r}") from None
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(name, f"expected a dict of redis-py connection arguments, got {value!r}")
    return dict(value)


def parse_crawl_id(name: str, value: Any) -> str:
    text = str(value)
    if not _CRAWL_ID.fullmatch(text):
        raise ConfigError(
            name, f"expected 1-200 letters, digits or ._@%+=,/- (no spaces), got {text!r}"
        )
    return text


def parse_lease(name: str, value: Any) -> float:
    number = parse_timeout(name, value)
    if number < MIN_LEASE:
        raise ConfigError(name, f"expected at least {MIN_LEASE} seconds, got {value!r}")
    return number


@dataclass(frozen=True)
class RedisConfig:
    """The distributed crawl's settings: a group of ``TraverseConfig`` (config/table.py)."""

    # scrapy-redis's names; the add-on leaves them unset (unset: a single-process crawl).
    url: str = setting("REDIS_URL", "", parse_redis_url, addon_default=False)
    params: dict[str, Any] = setting(
        "REDIS_PARAMS", {}, parse_redis_params, addon_default=False, compare=False
    )
    crawl_id: str = setting("TRAVERSE_CRAWL_ID", "traverse", parse_crawl_id)
    idle_timeout: float = setting("TRAVERSE_IDLE_TIMEOUT", 60.0, parse_optional_timeout)
    lease_timeout: float = setting("TRAVERSE_LEASE_TIMEOUT", 60.0, parse_lease)
    redis_retry: float = setting("TRAVERSE_REDIS_RETRY", 30.0, parse_optional_timeout)

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> RedisConfig:
        """Every field parsed; ``REDIS_URL`` with ``JOBDIR`` is refused (exit 2 naming both)."""
        config = cls(**read_settings(SETTINGS, settings))
        if config.enabled and settings.get("JOBDIR"):
            raise ConfigError(
                "JOBDIR/REDIS_URL",
                "give one of them: JOBDIR keeps a single-process crawl on disk, "
                "REDIS_URL makes it a distributed crawl whose state is in Redis",
            )
        sitemaps = settings.get("TRAVERSE_SITEMAPS")
        if config.enabled and sitemaps not in (None, "off"):
            raise ConfigError(
                "TRAVERSE_SITEMAPS", f"{sitemaps!r} is not supported with REDIS_URL yet; use 'off'"
            )
        return config


SETTINGS = own_settings(RedisConfig)
