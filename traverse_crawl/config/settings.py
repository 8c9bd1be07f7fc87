"""Typed, validated traverse_crawl settings (docs/settings.md).

Every setting is read once, here, into a frozen ``TraverseConfig``: ``FIELDS`` has one
row per setting with its default (the only place defaults live) and its parser. An
invalid value raises ``ConfigError`` naming the setting and the accepted values, at
start-up and never halfway through a crawl. ``get_config(crawler)`` parses them once per
crawler; the ``Protocol`` types keep this module free of Scrapy.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol, TypeVar, get_args

import ada_url
import cssselect

from traverse_crawl.config.choices import SCOPES, SEEN_KEYS, RobotsMatcher, RobotsPolicy
from traverse_crawl.config.distributed import DEFAULTS as REDIS_DEFAULTS
from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.policies import POLICIES
from traverse_crawl.config.scrapy_settings import (
    check_scrapy_settings,
    parse_count,
    parse_delay,
    parse_integer,
    parse_size,
    parse_timeout,
)
from traverse_crawl.errors import ConfigError

if TYPE_CHECKING:
    from traverse_crawl.checks.rules import Checks
    from traverse_crawl.extraction.rules import Rules

Mode = Literal["live", "capture", "replay"]
RenderPolicy = Literal["never", "always", "on-shell-warning"]
SitemapMode = Literal["off", "robots", "auto"]
RobotsMetaMode = Literal["ignore", "obey"]
ProgressMode = Literal["auto", "off"]
LogFormat = Literal["text", "json"]
MAX_RETRIES = 5

T = TypeVar("T")
C = TypeVar("C", bound=str)
Parser = Callable[[str, Any], T]


class SettingsLike(Protocol):
    """What is read from a settings object: Scrapy's ``Settings``, or a plain dict."""

    def get(self, name: str, default: Any = None) -> Any: ...


class HasSettings(Protocol):
    """A Scrapy ``Crawler``, as far as ``get_config`` needs one."""

    @property
    def settings(self) -> SettingsLike: ...


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


def parse_extract(name: str, value: Any) -> Rules | None:
    """The extraction file's path, read and compiled now (``extraction/rules.py``);
    "" for none. Its own errors name the item type and the field."""
    if isinstance(value, str) and not value.strip():
        return None  # no extraction: none of its modules (regex, tomllib: 0.1 s) is imported
    # Imported here: a crawl without extraction (and every child process) loads none of it.
    from traverse_crawl.extraction.rules import Rules, load_rules

    if isinstance(value, Rules):
        return value
    if not isinstance(value, str):
        raise ConfigError(name, f"expected the path of a TOML or JSON file, got {value!r}")
    path = value.strip()
    return load_rules(path) if path else None


def parse_checks(name: str, value: Any) -> Checks | None:
    """The checks file's path, read and checked now (``checks/rules.py``); "" for none.
    Its types and fields are checked against ``TRAVERSE_EXTRACT`` in ``from_settings``."""
    if isinstance(value, str) and not value.strip():
        return None
    from traverse_crawl.checks.rules import Checks, load_checks

    if isinstance(value, Checks):
        return value
    if not isinstance(value, str):
        raise ConfigError(name, f"expected the path of a TOML or JSON file, got {value!r}")
    return load_checks(value.strip())


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


class Field(NamedTuple):
    setting: str
    default: Any
    parse: Parser[Any]


# Every setting traverse_crawl reads: its TraverseConfig field, name, default and
# parser. The one place defaults live; settings.py takes its values from here.
FIELDS: dict[str, Field] = {
    "mode": Field("TRAVERSE_MODE", "capture", choice(get_args(Mode))),
    "store": Field("TRAVERSE_STORE", ".traverse/snapshots", parse_path),
    "manifest_dir": Field("TRAVERSE_MANIFEST_DIR", ".traverse/manifests", parse_path),
    "max_pages": Field("TRAVERSE_MAX_PAGES", 20, parse_whole),
    "max_depth": Field("TRAVERSE_MAX_DEPTH", 2, parse_whole),
    "min_delay": Field("TRAVERSE_MIN_DELAY", 1.0, parse_delay),
    "robots_obey": Field("ROBOTSTXT_OBEY", True, parse_bool),
    "robots_policy": Field("TRAVERSE_ROBOTS_POLICY", "fail-open", choice(get_args(RobotsPolicy))),
    "robots_matcher": Field("TRAVERSE_ROBOTS_MATCHER", "traverse", choice(get_args(RobotsMatcher))),
    "robots_crawl_delay_max": Field("TRAVERSE_ROBOTS_CRAWL_DELAY_MAX", 10.0, parse_delay),
    # obey: a page's meta robots and X-Robots-Tag nofollow/noarchive (crawl/robots_meta.py)
    "robots_meta": Field("TRAVERSE_ROBOTS_META", "ignore", choice(get_args(RobotsMetaMode))),
    # Back-off and pace of an origin that pushes back (politeness/backoff.py).
    "max_delay": Field(
        "TRAVERSE_MAX_DELAY", 60.0, lambda n, v: parse_delay(n, parse_non_negative(n, v))
    ),
    "delay_factor": Field("TRAVERSE_DELAY_FACTOR", 0.0, parse_non_negative),
    # Challenge pages, recorded ``blocked`` and never captured (politeness/block_pages.py).
    "block_patterns": Field("TRAVERSE_BLOCK_PATTERNS", (), parse_patterns),
    "block_stop_after": Field("TRAVERSE_BLOCK_STOP_AFTER", 0, parse_whole),
    "retry_times": Field("RETRY_TIMES", 2, parse_retries),
    "retry_backoff": Field("TRAVERSE_RETRY_BACKOFF", 0.25, parse_delay),
    "retry_after_max": Field("TRAVERSE_RETRY_AFTER_MAX", 30.0, parse_delay),
    "download_timeout": Field("DOWNLOAD_TIMEOUT", 15.0, parse_timeout),
    # Read by Scrapy's getint too: digits only ("1e6" would crash Scrapy).
    "download_maxsize": Field("DOWNLOAD_MAXSIZE", 33554432, parse_size),
    "redirect_max_times": Field("REDIRECT_MAX_TIMES", 5, parse_size),
    "user_agent": Field(
        "USER_AGENT",
        # An honest bot name; its first product token selects the robots.txt group.
        "traverse_crawl-bot/0.1 (+https://example.invalid/traverse_crawl; "
        "contact: set-a-real-contact@example.com)",
        parse_user_agent,
    ),
    "revalidate": Field("TRAVERSE_REVALIDATE", False, parse_bool),
    "render": Field("TRAVERSE_RENDER", "never", choice(get_args(RenderPolicy))),
    "render_wait_for": Field("TRAVERSE_RENDER_WAIT_FOR", "", parse_selector),
    "egress_guard": Field("TRAVERSE_EGRESS_GUARD", True, parse_bool),
    "egress_allow": Field("TRAVERSE_EGRESS_ALLOW", (), parse_origins),
    "dns_ttl_max": Field("TRAVERSE_DNS_TTL_MAX", 300.0, parse_delay),  # egress/dns_cache.py
    "sitemaps": Field("TRAVERSE_SITEMAPS", "off", choice(get_args(SitemapMode))),
    "warc_dir": Field("TRAVERSE_WARC_DIR", "", lambda _, value: str(value).strip()),
    "warc_max_size": Field("TRAVERSE_WARC_MAX_SIZE", 1024**3, parse_count),
    "warc_stall_timeout": Field("TRAVERSE_WARC_STALL_TIMEOUT", 60.0, parse_timeout),
    "snapshot_stall_timeout": Field("TRAVERSE_SNAPSHOT_STALL_TIMEOUT", 60.0, parse_timeout),
    # s3:// locations: how long a call is retried while the endpoint is away (storage/bucket.py)
    "s3_retry": Field("TRAVERSE_S3_RETRY", 30.0, parse_delay),
    "max_header_size": Field("TRAVERSE_MAX_HEADER_SIZE", 65536, parse_header_size),
    "max_links_per_page": Field("TRAVERSE_MAX_LINKS_PER_PAGE", 10000, parse_whole),
    # Verify TLS certificates, as Traverse (Node's fetch) does; Scrapy's default
    # is False. False (intranets, tests) adds a page warning (fetch/tls_middleware.py).
    "tls_verify": Field("DOWNLOAD_VERIFY_CERTIFICATES", True, parse_bool),
    "progress": Field("TRAVERSE_PROGRESS", "auto", choice(get_args(ProgressMode))),
    # json: one JSON object per log line (operations/json_log.py)
    "log_format": Field("TRAVERSE_LOG_FORMAT", "text", choice(get_args(LogFormat))),
    # The crawl process tuned for the traverse spider's workload (addon.py, PROCESS_TUNING):
    # the project's own settings.py opts in; another project's spiders keep Scrapy's.
    "process_tuning": Field("TRAVERSE_PROCESS_TUNING", False, parse_bool),
    # Replay reads pages ahead in a process of its own (replay/reader_process.py);
    # False: in the crawl.
    "replay_reader": Field("TRAVERSE_REPLAY_READER", True, parse_bool),
    # The id of the snapshots of requests that are not frontier pages; "": the spider's name.
    "source_id": Field("TRAVERSE_SOURCE_ID", "", parse_text),
    # The item field that gets the sourceRef of the item's response.
    "item_source_field": Field("TRAVERSE_ITEM_SOURCE_FIELD", "sourceRef", parse_field_name),
    # Request headers that select content, besides Accept and Accept-Language: a request
    # that sets one apart from its default has a page id of its own (snapshots/request_key.py).
    "request_key_headers": Field("TRAVERSE_REQUEST_KEY_HEADERS", [], parse_list),
    # Each seed's links not admitted, in <manifest name>.skipped.jsonl (crawl/skipped.py).
    "skipped": Field("TRAVERSE_SKIPPED", False, parse_bool),
    # The preset of crawl-policy defaults (config/policies.py, applied by the add-on).
    "policy": Field("TRAVERSE_POLICY", "traverse", choice(tuple(POLICIES))),
    # What a seed's frontier admits (crawl/scope.py, docs/crawling-real-sites.md).
    "scope": Field("TRAVERSE_SCOPE", "origin", choice(SCOPES)),
    "include": Field("TRAVERSE_INCLUDE", (), parse_patterns),
    "exclude": Field("TRAVERSE_EXCLUDE", (), parse_patterns),
    "extra_hops": Field("TRAVERSE_EXTRA_HOPS", 0, parse_whole),
    "trap_guards": Field("TRAVERSE_TRAP_GUARDS", False, parse_bool),
    "max_url_length": Field("TRAVERSE_MAX_URL_LENGTH", 2048, parse_positive),
    "seen_key": Field("TRAVERSE_SEEN_KEY", "verbatim", choice(SEEN_KEYS)),
    "ignore_params": Field("TRAVERSE_IGNORE_PARAMS", (), lambda n, v: tuple(parse_list(n, v))),
    # A Prometheus endpoint while the crawl runs (operations/metrics.py); 0: off.
    "metrics_port": Field("TRAVERSE_METRICS_PORT", 0, parse_port),
    "metrics_host": Field("TRAVERSE_METRICS_HOST", "127.0.0.1", parse_host),
    # The final stats and each seed's totals, one JSON file; "": none.
    "stats_file": Field("TRAVERSE_STATS_FILE", "", parse_file_path),
    # Extraction with evidence (docs/extraction.md): the rules file, where items go, bounds.
    "extract": Field("TRAVERSE_EXTRACT", "", parse_extract),
    "items_dir": Field("TRAVERSE_ITEMS_DIR", ".traverse/items", parse_path),
    "max_items_per_page": Field("TRAVERSE_MAX_ITEMS_PER_PAGE", 1000, parse_positive),
    # Bytes of one page's items and evidence, counted as they are made (extraction/extractor.py).
    "max_item_bytes_per_page": Field(
        "TRAVERSE_MAX_ITEM_BYTES_PER_PAGE", 16 * 1024**2, parse_positive
    ),
    "extract_timeout": Field("TRAVERSE_EXTRACT_TIMEOUT", 10.0, parse_timeout),
    # A crawl extracts in a process of its own (extraction/process_main.py); False: in
    # a thread of the crawl.
    "extract_process": Field("TRAVERSE_EXTRACT_PROCESS", True, parse_bool),
    # Data-quality checks of each seed (docs/checks.md): thresholds, with evidence.
    "checks": Field("TRAVERSE_CHECKS", "", parse_checks),
}
DEFAULTS: dict[str, Any] = {field.setting: field.default for field in FIELDS.values()}
DEFAULTS.update(REDIS_DEFAULTS)  # a distributed crawl's (config/distributed.py)


@dataclass(frozen=True)
class TraverseConfig:
    mode: Mode
    store: str
    manifest_dir: str
    max_pages: int
    max_depth: int
    min_delay: float
    robots_obey: bool
    robots_policy: RobotsPolicy
    robots_matcher: RobotsMatcher
    robots_crawl_delay_max: float
    robots_meta: RobotsMetaMode
    max_delay: float
    delay_factor: float
    block_patterns: tuple[str, ...]
    block_stop_after: int
    retry_times: int
    retry_backoff: float
    retry_after_max: float
    download_timeout: float
    download_maxsize: int
    redirect_max_times: int
    user_agent: str
    revalidate: bool
    render: RenderPolicy
    render_wait_for: str
    egress_guard: bool
    egress_allow: frozenset[str]
    dns_ttl_max: float
    sitemaps: SitemapMode
    warc_dir: str
    warc_max_size: int
    warc_stall_timeout: float
    snapshot_stall_timeout: float
    s3_retry: float
    max_header_size: int
    max_links_per_page: int
    tls_verify: bool
    progress: ProgressMode
    log_format: LogFormat
    process_tuning: bool
    replay_reader: bool
    source_id: str
    item_source_field: str
    request_key_headers: list[str]
    skipped: bool
    policy: str
    scope: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    extra_hops: int
    trap_guards: bool
    max_url_length: int
    seen_key: str
    ignore_params: tuple[str, ...]
    metrics_port: int
    metrics_host: str
    stats_file: str
    extract: Rules | None
    items_dir: str
    max_items_per_page: int
    max_item_bytes_per_page: int
    extract_timeout: float
    extract_process: bool
    checks: Checks | None
    redis: RedisConfig  # REDIS_URL and the distributed crawl's settings

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> TraverseConfig:
        """Every field parsed from its setting; an unset one takes its default."""
        values = {}
        for attr, (name, default, parse) in FIELDS.items():
            value = settings.get(name)
            values[attr] = parse(name, default if value is None else value)
        check_scrapy_settings(settings)  # Scrapy's own settings a crawl relies on
        if values["checks"] is not None and values["extract"] is not None:
            from traverse_crawl.checks.rules import check_against

            check_against(values["checks"], values["extract"])
        redis = RedisConfig.from_settings(settings)
        return cls(**values, redis=redis)


_ATTR = "_traverse_config"


def get_config(crawler: HasSettings) -> TraverseConfig:
    """The crawl's config, parsed on first use and shared by its components.

    Raises ``ConfigError`` naming a bad setting.
    """
    config: TraverseConfig | None = getattr(crawler, _ATTR, None)
    if config is None:
        config = TraverseConfig.from_settings(crawler.settings)
        setattr(crawler, _ATTR, config)
    return config
