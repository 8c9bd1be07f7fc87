"""The parsers of the settings table (config/settings.py): each turns what the user wrote
into the value a config attribute holds, or raises ``ConfigError`` naming the setting
and what is accepted. Pure: names and values only.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from typing import Any, TypeVar

import ada_url
import cssselect

from traverse_crawl.config.scrapy_settings import parse_integer
from traverse_crawl.config.table import Parser
from traverse_crawl.errors import ConfigError

MAX_RETRIES = 5
C = TypeVar("C", bound=str)


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


def parse_choice(name: str, value: Any, choices: tuple[C, ...]) -> C:
    for choice in choices:
        if value == choice:
            return choice
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
    """A JSON list or a comma-separated string, as every list setting accepts."""
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
        try:
            parsed = ada_url.URL(item)  # WHATWG, as the fetch path parses URLs
        except ValueError:
            raise ConfigError(name, f"{item!r} is not an http(s) origin") from None
        if parsed.protocol not in ("http:", "https:"):
            raise ConfigError(name, f"{item!r} is not an http(s) origin")
        if parsed.pathname not in ("", "/") or parsed.search or parsed.hash:
            raise ConfigError(name, f"{item!r} must be an origin, without path or query")
        origins.add(str(parsed.origin))
    return frozenset(origins)


def choice(choices: tuple[C, ...]) -> Parser[C]:
    return lambda name, value: parse_choice(name, value, choices)


def at_least(low: float, high: float = math.inf) -> Parser[float]:
    """A number, clamped to ``[low, high]`` (Traverse clamps rather than refuses)."""
    return lambda name, value: min(max(low, parse_float(name, value)), high)


def parse_path(name: str, value: Any) -> str:
    text = str(value)
    if not text.strip():
        raise ConfigError(name, f"expected a directory path, got {text!r}")
    return text


def parse_file_path(name: str, value: Any) -> str:
    """A file's path, or "" for none."""
    if not isinstance(value, str):
        raise ConfigError(name, f"expected a file path, got {value!r}")
    text = value.strip()
    if text.endswith(("/", "\\")):
        raise ConfigError(name, f"expected a file path, got the directory {text!r}")
    return text


def parse_retries(name: str, value: Any) -> int:
    # Traverse clamps retries to [0, 5]; we also round down, since a
    # fractional attempt count means nothing.
    return int(at_least(0.0, MAX_RETRIES)(name, value))


def parse_user_agent(name: str, value: Any) -> str:
    """Non-empty: an empty name matches every robots.txt group."""
    text = str(value)
    if not text.strip():
        raise ConfigError(
            name,
            "expected a non-empty bot name (its first product token selects the "
            f"robots.txt group), got {text!r}",
        )
    return text


def parse_header_size(name: str, value: Any) -> int:
    return parse_integer(name, value, 1024)


def parse_text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(name, f"expected a string, got {value!r}")
    return value


def parse_port(name: str, value: Any) -> int:
    """A TCP port, 1-65535, or 0 for off."""
    port = parse_whole(name, value)
    if port > 65535:
        raise ConfigError(name, f"expected a TCP port (1-65535) or 0 for off, got {value!r}")
    return port


_HOST_LABEL = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?")


def parse_host(name: str, value: Any) -> str:
    """An address to listen on: an IP address, or a host name whose labels (IDNA-encoded)
    are 1 to 63 letters, digits, "-" or "_"; never empty."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(name, f"expected an address to listen on, got {value!r}")
    host = value.strip()
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    try:
        labels = host.encode("idna").decode("ascii").removesuffix(".").split(".")
    except UnicodeError:
        labels = [""]
    if not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise ConfigError(name, f"expected an IP address or a host name, got {value!r}")
    return host


def parse_field_name(name: str, value: Any) -> str:
    """An item field's name: a non-empty string without surrounding spaces."""
    if not isinstance(value, str) or not value or value != value.strip():
        raise ConfigError(name, f"expected the name of an item field, got {value!r}")
    return value


def parse_data_path(name: str, value: Any) -> str | None:
    """A TOML or JSON file's path, None for none (""): TRAVERSE_EXTRACT, TRAVERSE_CHECKS.
    The feature that owns the setting reads the file (``FeatureSetting``)."""
    if not isinstance(value, str):
        raise ConfigError(name, f"expected the path of a TOML or JSON file, got {value!r}")
    return value.strip() or None


def parse_non_negative(name: str, value: Any) -> float:
    """A finite number >= 0; a negative one is refused, not clamped."""
    number = parse_float(name, value)
    if number < 0:
        raise ConfigError(name, f"expected a number >= 0, got {value!r}")
    return number


def parse_positive(name: str, value: Any) -> int:
    return parse_integer(name, value, 1)


def check_patterns(name: str, patterns: list[str]) -> tuple[str, ...]:
    """Each a Python regular expression that compiles; the message names the first that does not."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(name, f"{pattern!r} is not a regular expression: {exc}") from None
    return tuple(patterns)


def parse_patterns(name: str, value: Any) -> tuple[str, ...]:
    """A list of regular expressions (a JSON list, or comma-separated), each compiled once."""
    return check_patterns(name, parse_list(name, value))
