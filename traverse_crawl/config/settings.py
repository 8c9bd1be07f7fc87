"""Typed, validated traverse_crawl settings (docs/settings.md).

Every setting is read once, here, into a frozen ``TraverseConfig``: each is one of its
attributes, declared with the setting's name, its default (the only place defaults
live) and its parser (config/table.py); the distributed crawl's are its ``redis``
group. An invalid value raises ``ConfigError`` naming the setting and the accepted
values, at start-up and never halfway through a crawl. The files that
TRAVERSE_EXTRACT and TRAVERSE_CHECKS name are read by their features, at the same time
(``FeatureSetting``). ``get_config(crawler)`` parses them once per crawler; the
``Protocol`` types keep this module free of Scrapy.
"""

from __future__ import annotations

import ipaddress
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, get_args

import ada_url
import cssselect

from traverse_crawl.config.choices import (
    SCOPES,
    SEEN_KEYS,
    RobotsMatcher,
    RobotsPolicy,
    Scope,
    SeenKeyKind,
)
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
from traverse_crawl.config.table import (
    Parser,
    SettingsLike,
    group,
    own_settings,
    read_settings,
    setting,
    table,
)
from traverse_crawl.errors import ConfigError

Mode = Literal["live", "capture", "replay"]
RenderPolicy = Literal["never", "always", "on-shell-warning"]
SitemapMode = Literal["off", "robots", "auto"]
RobotsMetaMode = Literal["ignore", "obey"]
ProgressMode = Literal["auto", "off"]
LogFormat = Literal["text", "json"]
MAX_RETRIES = 5

T = TypeVar("T")
C = TypeVar("C", bound=str)


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


@dataclass(frozen=True)
class TraverseConfig:
    """Every setting traverse_crawl reads, one attribute each, with its setting's name,
    default and parser (config/table.py): the one place a setting is defined."""

    mode: Mode = setting("TRAVERSE_MODE", "capture", choice(get_args(Mode)))
    store: str = setting("TRAVERSE_STORE", ".traverse/snapshots", parse_path)
    manifest_dir: str = setting("TRAVERSE_MANIFEST_DIR", ".traverse/manifests", parse_path)
    max_pages: int = setting("TRAVERSE_MAX_PAGES", 20, parse_whole)
    max_depth: int = setting("TRAVERSE_MAX_DEPTH", 2, parse_whole)
    min_delay: float = setting("TRAVERSE_MIN_DELAY", 1.0, parse_delay)
    robots_obey: bool = setting("ROBOTSTXT_OBEY", True, parse_bool)
    robots_policy: RobotsPolicy = setting(
        "TRAVERSE_ROBOTS_POLICY", "fail-open", choice(get_args(RobotsPolicy))
    )
    robots_matcher: RobotsMatcher = setting(
        "TRAVERSE_ROBOTS_MATCHER", "traverse", choice(get_args(RobotsMatcher))
    )
    robots_crawl_delay_max: float = setting("TRAVERSE_ROBOTS_CRAWL_DELAY_MAX", 10.0, parse_delay)
    # obey: a page's meta robots and X-Robots-Tag nofollow/noarchive (crawl/robots_meta.py)
    robots_meta: RobotsMetaMode = setting(
        "TRAVERSE_ROBOTS_META", "ignore", choice(get_args(RobotsMetaMode))
    )
    # Back-off and pace of an origin that pushes back (politeness/backoff.py).
    max_delay: float = setting(
        "TRAVERSE_MAX_DELAY", 60.0, lambda n, v: parse_delay(n, parse_non_negative(n, v))
    )
    delay_factor: float = setting("TRAVERSE_DELAY_FACTOR", 0.0, parse_non_negative)
    # Challenge pages, recorded ``blocked`` and never captured (politeness/block_pages.py).
    block_patterns: tuple[str, ...] = setting("TRAVERSE_BLOCK_PATTERNS", (), parse_patterns)
    block_stop_after: int = setting("TRAVERSE_BLOCK_STOP_AFTER", 0, parse_whole)
    retry_times: int = setting("RETRY_TIMES", 2, parse_retries)
    retry_backoff: float = setting("TRAVERSE_RETRY_BACKOFF", 0.25, parse_delay)
    retry_after_max: float = setting("TRAVERSE_RETRY_AFTER_MAX", 30.0, parse_delay)
    download_timeout: float = setting("DOWNLOAD_TIMEOUT", 15.0, parse_timeout)
    # Read by Scrapy's getint too: digits only ("1e6" would crash Scrapy).
    download_maxsize: int = setting("DOWNLOAD_MAXSIZE", 33554432, parse_size)
    redirect_max_times: int = setting("REDIRECT_MAX_TIMES", 5, parse_size)
    user_agent: str = setting(
        "USER_AGENT",
        # An honest bot name; its first product token selects the robots.txt group.
        "traverse_crawl-bot/0.1 (+https://example.invalid/traverse_crawl; "
        "contact: set-a-real-contact@example.com)",
        parse_user_agent,
    )
    revalidate: bool = setting("TRAVERSE_REVALIDATE", False, parse_bool)
    render: RenderPolicy = setting("TRAVERSE_RENDER", "never", choice(get_args(RenderPolicy)))
    render_wait_for: str = setting("TRAVERSE_RENDER_WAIT_FOR", "", parse_selector)
    egress_guard: bool = setting("TRAVERSE_EGRESS_GUARD", True, parse_bool)
    egress_allow: frozenset[str] = setting("TRAVERSE_EGRESS_ALLOW", (), parse_origins)
    dns_ttl_max: float = setting("TRAVERSE_DNS_TTL_MAX", 300.0, parse_delay)  # egress/dns_cache.py
    sitemaps: SitemapMode = setting("TRAVERSE_SITEMAPS", "off", choice(get_args(SitemapMode)))
    warc_dir: str = setting("TRAVERSE_WARC_DIR", "", lambda _, value: str(value).strip())
    warc_max_size: int = setting("TRAVERSE_WARC_MAX_SIZE", 1024**3, parse_count)
    warc_stall_timeout: float = setting("TRAVERSE_WARC_STALL_TIMEOUT", 60.0, parse_timeout)
    snapshot_stall_timeout: float = setting("TRAVERSE_SNAPSHOT_STALL_TIMEOUT", 60.0, parse_timeout)
    # s3:// locations: how long a call is retried while the endpoint is away (storage/bucket.py)
    s3_retry: float = setting("TRAVERSE_S3_RETRY", 30.0, parse_delay)
    max_header_size: int = setting("TRAVERSE_MAX_HEADER_SIZE", 65536, parse_header_size)
    max_links_per_page: int = setting("TRAVERSE_MAX_LINKS_PER_PAGE", 10000, parse_whole)
    # Verify TLS certificates, as Traverse (Node's fetch) does; Scrapy's default
    # is False. False (intranets, tests) adds a page warning (fetch/tls_middleware.py).
    tls_verify: bool = setting("DOWNLOAD_VERIFY_CERTIFICATES", True, parse_bool)
    progress: ProgressMode = setting("TRAVERSE_PROGRESS", "auto", choice(get_args(ProgressMode)))
    # json: one JSON object per log line (operations/json_log.py)
    log_format: LogFormat = setting("TRAVERSE_LOG_FORMAT", "text", choice(get_args(LogFormat)))
    # The crawl process tuned for the traverse spider's workload (addon.py, PROCESS_TUNING):
    # the project's own settings.py opts in; another project's spiders keep Scrapy's.
    process_tuning: bool = setting("TRAVERSE_PROCESS_TUNING", False, parse_bool)
    # Replay reads pages ahead in a process of its own (replay/reader_process.py);
    # False: in the crawl.
    replay_reader: bool = setting("TRAVERSE_REPLAY_READER", True, parse_bool)
    # The id of the snapshots of requests that are not frontier pages; "": the spider's name.
    source_id: str = setting("TRAVERSE_SOURCE_ID", "", parse_text)
    # The item field that gets the sourceRef of the item's response.
    item_source_field: str = setting("TRAVERSE_ITEM_SOURCE_FIELD", "sourceRef", parse_field_name)
    # Request headers that select content, besides Accept and Accept-Language: a request
    # that sets one apart from its default has a page id of its own (snapshots/request_key.py).
    request_key_headers: list[str] = setting("TRAVERSE_REQUEST_KEY_HEADERS", [], parse_list)
    # Each seed's links not admitted, in <manifest name>.skipped.jsonl (crawl/skipped.py).
    skipped: bool = setting("TRAVERSE_SKIPPED", False, parse_bool)
    # The preset of crawl-policy defaults (config/policies.py, applied by the add-on).
    policy: str = setting("TRAVERSE_POLICY", "traverse", choice(tuple(POLICIES)))
    # What a seed's frontier admits (crawl/scope.py, docs/crawling-real-sites.md).
    scope: Scope = setting("TRAVERSE_SCOPE", "origin", choice(SCOPES))
    include: tuple[str, ...] = setting("TRAVERSE_INCLUDE", (), parse_patterns)
    exclude: tuple[str, ...] = setting("TRAVERSE_EXCLUDE", (), parse_patterns)
    extra_hops: int = setting("TRAVERSE_EXTRA_HOPS", 0, parse_whole)
    trap_guards: bool = setting("TRAVERSE_TRAP_GUARDS", False, parse_bool)
    max_url_length: int = setting("TRAVERSE_MAX_URL_LENGTH", 2048, parse_positive)
    seen_key: SeenKeyKind = setting("TRAVERSE_SEEN_KEY", "verbatim", choice(SEEN_KEYS))
    ignore_params: tuple[str, ...] = setting(
        "TRAVERSE_IGNORE_PARAMS", (), lambda n, v: tuple(parse_list(n, v))
    )
    # A Prometheus endpoint while the crawl runs (operations/metrics.py); 0: off.
    metrics_port: int = setting("TRAVERSE_METRICS_PORT", 0, parse_port)
    metrics_host: str = setting("TRAVERSE_METRICS_HOST", "127.0.0.1", parse_host)
    # The final stats and each seed's totals, one JSON file; "": none.
    stats_file: str = setting("TRAVERSE_STATS_FILE", "", parse_file_path)
    # Extraction with evidence (docs/extraction.md): the rules file's path, None for none
    # (the extraction feature reads it: extraction/setting.py), where items go, bounds.
    extract: str | None = setting("TRAVERSE_EXTRACT", "", parse_data_path)
    items_dir: str = setting("TRAVERSE_ITEMS_DIR", ".traverse/items", parse_path)
    max_items_per_page: int = setting("TRAVERSE_MAX_ITEMS_PER_PAGE", 1000, parse_positive)
    # Bytes of one page's items and evidence, counted as they are made (extraction/extractor.py).
    max_item_bytes_per_page: int = setting(
        "TRAVERSE_MAX_ITEM_BYTES_PER_PAGE", 16 * 1024**2, parse_positive
    )
    extract_timeout: float = setting("TRAVERSE_EXTRACT_TIMEOUT", 10.0, parse_timeout)
    # A crawl extracts in a process of its own (extraction/process_main.py); False: in
    # a thread of the crawl.
    extract_process: bool = setting("TRAVERSE_EXTRACT_PROCESS", True, parse_bool)
    # Data-quality checks of each seed (docs/checks.md): the checks file's path, None for
    # none (the checks feature reads it: checks/setting.py).
    checks: str | None = setting("TRAVERSE_CHECKS", "", parse_data_path)
    # REDIS_URL and the distributed crawl's settings (config/distributed.py).
    redis: RedisConfig = group(RedisConfig)
    # What the features read from the files their settings name (FeatureSetting.of).
    features: Mapping[str, object] = field(default_factory=dict, compare=False)

    @classmethod
    def from_settings(cls, settings: SettingsLike) -> TraverseConfig:
        """Every attribute parsed from its setting; an unset one takes its default."""
        values = read_settings(OWN_SETTINGS, settings)
        check_scrapy_settings(settings)  # Scrapy's own settings a crawl relies on
        features = read_features(values)
        redis = RedisConfig.from_settings(settings)
        return cls(**values, redis=redis, features=MappingProxyType(features))


# Every setting traverse_crawl reads, the distributed crawl's included: docs/settings.md
# lists each one, the add-on sets each default (but REDIS_URL's and REDIS_PARAMS').
OWN_SETTINGS = own_settings(TraverseConfig)
TABLE = table(TraverseConfig)
DEFAULTS: dict[str, Any] = {row.name: row.default for row in TABLE if row.addon_default}


class FeatureSetting(Generic[T]):
    """A setting whose file a feature reads: TRAVERSE_EXTRACT's rules, TRAVERSE_CHECKS'
    thresholds.

    The table holds the path, checked as a path; the feature that owns the setting makes
    one ``FeatureSetting`` with the function that reads the file (and raises
    ``ConfigError`` naming the setting and the key), and ``from_settings`` calls it at
    start-up, in the table's order, so a bad file stops the crawl before any request
    while config imports nothing of the feature. ``read(name, path, features)`` gets
    what the features before it read; ``of(config)`` is what it returned, None when the
    setting is unset.
    """

    def __init__(self, setting: str, read: Callable[[str, str, Mapping[str, object]], T]) -> None:
        if not any(row.name == setting and row.parse is parse_data_path for row in TABLE):
            raise ValueError(f"{setting} is not a setting that names a file")
        self.setting = setting
        self.read = read
        _READERS[setting] = self

    def of(self, config: TraverseConfig) -> T | None:
        return self.among(config.features)

    def among(self, features: Mapping[str, object]) -> T | None:
        return cast("T | None", features.get(self.setting))


_READERS: dict[str, FeatureSetting[Any]] = {}


def read_features(values: Mapping[str, Any]) -> dict[str, object]:
    """What each set file setting's feature reads from its file."""
    features: dict[str, object] = {}
    for row in OWN_SETTINGS:
        path = values[row.attr]
        if row.parse is not parse_data_path or path is None:
            continue
        reader = _READERS.get(row.name)
        if reader is None:  # a program error: the feature's module was not imported
            raise RuntimeError(f"{row.name} is set, but no feature reads it")
        features[row.name] = reader.read(row.name, path, features)
    return features


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
