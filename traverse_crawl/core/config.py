"""Typed, validated traverse_crawl settings (CONTRACT §2).

Every setting is read once, here, into a frozen ``TraverseConfig``; an invalid
value raises ``ConfigError`` naming the setting and the accepted values, at
start-up and never halfway through a crawl (STYLE §3). Values may come from
``settings.py`` (typed) or ``-s NAME=VALUE`` / scrapyd ``setting=`` (strings).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Protocol

import cssselect

from traverse_crawl.core import urls
from traverse_crawl.core.errors import ConfigError

MODES = ("live", "capture", "replay")
ROBOTS_POLICIES = ("fail-open", "rfc9309")
ROBOTS_MATCHERS = ("traverse", "rfc9309")
RENDER_POLICIES = ("never", "always", "on-shell-warning")
MAX_RETRIES = 5

DEFAULTS: dict[str, Any] = {
    "TRAVERSE_MODE": "capture",
    "TRAVERSE_STORE": ".traverse/snapshots",
    "TRAVERSE_MANIFEST_DIR": ".traverse/manifests",
    "TRAVERSE_MAX_PAGES": 20,
    "TRAVERSE_MAX_DEPTH": 2,
    "TRAVERSE_MIN_DELAY": 1.0,
    "TRAVERSE_ROBOTS_POLICY": "fail-open",
    "TRAVERSE_ROBOTS_MATCHER": "traverse",
    "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": 10.0,
    "TRAVERSE_RETRY_BACKOFF": 0.25,
    "TRAVERSE_RETRY_AFTER_MAX": 30.0,
    "TRAVERSE_REVALIDATE": False,
    "TRAVERSE_RENDER": "never",
    "TRAVERSE_RENDER_WAIT_FOR": "",
    "TRAVERSE_EGRESS_GUARD": True,
    "TRAVERSE_EGRESS_ALLOW": [],
    "ROBOTSTXT_OBEY": True,
    "RETRY_TIMES": 2,
    "DOWNLOAD_TIMEOUT": 15.0,
    "DOWNLOAD_MAXSIZE": 33554432,
    "REDIRECT_MAX_TIMES": 5,
}


class SettingsLike(Protocol):
    def get(self, name: str, default: Any = None) -> Any: ...


def _raw(settings: SettingsLike, name: str) -> Any:
    value = settings.get(name)
    return DEFAULTS[name] if value is None else value


def parse_bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
    raise ConfigError(name, f"expected a boolean (True/False), got {value!r}")


def parse_float(name: str, value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ConfigError(name, f"expected a finite number, got {value!r}")
    return number


def parse_whole(name: str, value: Any) -> int:
    """A whole number >= 0; ``3.0`` is accepted, ``1.5`` and ``-1`` are not."""
    if isinstance(value, bool):
        raise ConfigError(name, f"expected a whole number >= 0, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(name, f"expected a whole number >= 0, got {value!r}") from None
    if not math.isfinite(number) or number < 0 or number != int(number):
        raise ConfigError(name, f"expected a whole number >= 0, got {value!r}")
    return int(number)


def parse_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if isinstance(value, str) and value in choices:
        return value
    accepted = ", ".join(repr(c) for c in choices)
    raise ConfigError(name, f"expected one of {accepted}, got {value!r}")


def parse_selector(name: str, value: Any) -> str:
    """A CSS selector, or ``""`` for none; checked with cssselect's parser."""
    text = "" if value is None else str(value).strip()
    if text:
        try:
            cssselect.parse(text)
        except cssselect.SelectorSyntaxError as exc:
            raise ConfigError(name, f"expected a CSS selector, got {text!r}: {exc}") from None
    return text


def parse_list(name: str, value: Any) -> list[str]:
    """A JSON list or a comma-separated string (CONTRACT §2)."""
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError:
                raise ConfigError(name, f"expected a JSON list, got {value!r}") from None
            if not isinstance(items, list):
                raise ConfigError(name, f"expected a JSON list, got {value!r}")
        else:
            items = [part.strip() for part in text.split(",") if part.strip()]
    else:
        raise ConfigError(name, f"expected a list, got {value!r}")
    if not all(isinstance(item, str) for item in items):
        raise ConfigError(name, f"expected a list of strings, got {value!r}")
    return items


def parse_origins(name: str, value: Any) -> frozenset[str]:
    """Exact origins such as ``http://127.0.0.1:8000``: no path, query or fragment."""
    origins = set()
    for item in parse_list(name, value):
        parsed = urls.parse(item)
        if parsed is None or parsed.protocol not in urls.HTTP_SCHEMES:
            raise ConfigError(name, f"{item!r} is not an http(s) origin")
        if parsed.pathname not in ("", "/") or parsed.search or parsed.hash:
            raise ConfigError(name, f"{item!r} must be an origin, without path or query")
        origins.add(str(parsed.origin))
    return frozenset(origins)


@dataclass(frozen=True)
class TraverseConfig:
    mode: str
    store: str
    manifest_dir: str
    max_pages: int
    max_depth: int
    min_delay: float
    robots_obey: bool
    robots_policy: str
    robots_matcher: str
    robots_crawl_delay_max: float
    retry_times: int
    retry_backoff: float
    retry_after_max: float
    download_timeout: float
    download_maxsize: int
    redirect_max_times: int
    user_agent: str
    revalidate: bool
    render: str
    render_wait_for: str
    egress_guard: bool
    egress_allow: frozenset[str]

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> TraverseConfig:
        min_delay = max(
            0.0, parse_float("TRAVERSE_MIN_DELAY", _raw(settings, "TRAVERSE_MIN_DELAY"))
        )
        retry_times = parse_float("RETRY_TIMES", _raw(settings, "RETRY_TIMES"))
        timeout = parse_float("DOWNLOAD_TIMEOUT", _raw(settings, "DOWNLOAD_TIMEOUT"))
        if timeout <= 0:
            raise ConfigError("DOWNLOAD_TIMEOUT", f"expected a number > 0, got {timeout!r}")
        backoff = parse_float("TRAVERSE_RETRY_BACKOFF", _raw(settings, "TRAVERSE_RETRY_BACKOFF"))
        retry_after_max = parse_float(
            "TRAVERSE_RETRY_AFTER_MAX", _raw(settings, "TRAVERSE_RETRY_AFTER_MAX")
        )
        crawl_delay_max = parse_float(
            "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX", _raw(settings, "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX")
        )
        store = str(_raw(settings, "TRAVERSE_STORE"))
        manifest_dir = str(_raw(settings, "TRAVERSE_MANIFEST_DIR"))
        if not store.strip():
            raise ConfigError("TRAVERSE_STORE", "expected a directory path, got ''")
        if not manifest_dir.strip():
            raise ConfigError("TRAVERSE_MANIFEST_DIR", "expected a directory path, got ''")
        user_agent = settings.get("USER_AGENT") or ""
        return cls(
            mode=parse_choice("TRAVERSE_MODE", _raw(settings, "TRAVERSE_MODE"), MODES),
            store=store,
            manifest_dir=manifest_dir,
            max_pages=parse_whole("TRAVERSE_MAX_PAGES", _raw(settings, "TRAVERSE_MAX_PAGES")),
            max_depth=parse_whole("TRAVERSE_MAX_DEPTH", _raw(settings, "TRAVERSE_MAX_DEPTH")),
            min_delay=min_delay,
            robots_obey=parse_bool("ROBOTSTXT_OBEY", _raw(settings, "ROBOTSTXT_OBEY")),
            robots_policy=parse_choice(
                "TRAVERSE_ROBOTS_POLICY", _raw(settings, "TRAVERSE_ROBOTS_POLICY"), ROBOTS_POLICIES
            ),
            robots_matcher=parse_choice(
                "TRAVERSE_ROBOTS_MATCHER",
                _raw(settings, "TRAVERSE_ROBOTS_MATCHER"),
                ROBOTS_MATCHERS,
            ),
            robots_crawl_delay_max=max(0.0, crawl_delay_max),
            # Traverse clamps retries to [0, 5] (SPEC §2.1); we also round down,
            # since a fractional attempt count means nothing.
            retry_times=int(max(0.0, min(retry_times, MAX_RETRIES))),
            retry_backoff=max(0.0, backoff),
            retry_after_max=max(0.0, retry_after_max),
            download_timeout=timeout,
            download_maxsize=parse_whole("DOWNLOAD_MAXSIZE", _raw(settings, "DOWNLOAD_MAXSIZE")),
            redirect_max_times=parse_whole(
                "REDIRECT_MAX_TIMES", _raw(settings, "REDIRECT_MAX_TIMES")
            ),
            user_agent=str(user_agent),
            revalidate=parse_bool("TRAVERSE_REVALIDATE", _raw(settings, "TRAVERSE_REVALIDATE")),
            render=parse_choice(
                "TRAVERSE_RENDER", _raw(settings, "TRAVERSE_RENDER"), RENDER_POLICIES
            ),
            render_wait_for=parse_selector(
                "TRAVERSE_RENDER_WAIT_FOR", _raw(settings, "TRAVERSE_RENDER_WAIT_FOR")
            ),
            egress_guard=parse_bool(
                "TRAVERSE_EGRESS_GUARD", _raw(settings, "TRAVERSE_EGRESS_GUARD")
            ),
            egress_allow=parse_origins(
                "TRAVERSE_EGRESS_ALLOW", _raw(settings, "TRAVERSE_EGRESS_ALLOW")
            ),
        )
