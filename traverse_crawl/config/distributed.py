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
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

from traverse_crawl.config.scrapy_settings import parse_optional_timeout, parse_timeout
from traverse_crawl.errors import ConfigError
from traverse_crawl.utils.redact import redact_url

# A crawl id becomes part of every key (``traverse:<crawl id>:...``): printable,
# no whitespace, no ``*?[]`` (they would turn a key listing into a pattern).
_CRAWL_ID = re.compile(r"[A-Za-z0-9._@%+=,/-]{1,200}")
URL_SCHEMES = ("redis", "rediss", "unix")
MIN_LEASE = 0.5  # seconds: below it, a busy worker could not renew its leases in time


class SettingsLike(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


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


class Field(NamedTuple):
    setting: str
    default: Any
    parse: Any


FIELDS: dict[str, Field] = {
    "url": Field("REDIS_URL", "", parse_redis_url),
    "params": Field("REDIS_PARAMS", {}, parse_redis_params),
    "crawl_id": Field("TRAVERSE_CRAWL_ID", "traverse", parse_crawl_id),
    "idle_timeout": Field("TRAVERSE_IDLE_TIMEOUT", 60.0, parse_optional_timeout),
    "lease_timeout": Field("TRAVERSE_LEASE_TIMEOUT", 60.0, parse_lease),
    "redis_retry": Field("TRAVERSE_REDIS_RETRY", 30.0, parse_optional_timeout),
}
# The project's settings.py sets these; REDIS_URL and REDIS_PARAMS stay unset
# there, as in scrapy-redis (unset means a single-process crawl).
DEFAULTS: dict[str, Any] = {
    f.setting: f.default for f in FIELDS.values() if f.setting.startswith("TRAVERSE_")
}


@dataclass(frozen=True)
class RedisConfig:
    url: str
    crawl_id: str
    idle_timeout: float
    lease_timeout: float
    redis_retry: float
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def enabled(self) -> bool:
        return bool(self.url)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> RedisConfig:
        """Every field parsed; ``REDIS_URL`` with ``JOBDIR`` is refused (exit 2 naming both)."""
        values = {}
        for attr, (name, default, parse) in FIELDS.items():
            value = settings.get(name)
            values[attr] = parse(name, default if value is None else value)
        config = cls(**values)
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
