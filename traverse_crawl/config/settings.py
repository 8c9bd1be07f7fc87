"""Typed, validated traverse_crawl settings (docs/settings.md).

Every setting is read once, here, into a frozen ``TraverseConfig``: each is one of its
attributes, declared with the setting's name, its default (the only place defaults
live) and its parser (config/table.py, config/parsers.py); the distributed crawl's
are its ``redis`` group. An invalid value raises ``ConfigError`` naming the setting and the accepted
values, at start-up and never halfway through a crawl. The files that
TRAVERSE_EXTRACT and TRAVERSE_CHECKS name are read by their features, at the same time
(``FeatureSetting``). ``get_config(crawler)`` parses them once per crawler; the
``Protocol`` types keep this module free of Scrapy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, Protocol, TypeVar, cast, get_args

from traverse_crawl.config.choices import (
    SCOPES,
    SEEN_KEYS,
    RobotsMatcher,
    RobotsPolicy,
    Scope,
    SeenKeyKind,
)
from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.parsers import (
    choice,
    parse_bool,
    parse_data_path,
    parse_field_name,
    parse_file_path,
    parse_header_size,
    parse_host,
    parse_list,
    parse_non_negative,
    parse_origins,
    parse_path,
    parse_patterns,
    parse_port,
    parse_positive,
    parse_retries,
    parse_selector,
    parse_text,
    parse_user_agent,
    parse_whole,
)
from traverse_crawl.config.policies import POLICIES
from traverse_crawl.config.scrapy_settings import (
    check_scrapy_settings,
    parse_count,
    parse_delay,
    parse_size,
    parse_timeout,
)
from traverse_crawl.config.table import (
    SettingsLike,
    group,
    own_settings,
    read_settings,
    setting,
    table,
)

Mode = Literal["live", "capture", "replay"]
RenderPolicy = Literal["never", "always", "on-shell-warning"]
SitemapMode = Literal["off", "robots", "auto"]
RobotsMetaMode = Literal["ignore", "obey"]
ProgressMode = Literal["auto", "off"]
LogFormat = Literal["text", "json"]

T = TypeVar("T")


class HasSettings(Protocol):
    """A Scrapy ``Crawler``, as far as ``get_config`` needs one."""

    @property
    def settings(self) -> SettingsLike: ...


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
    # obey: a page's meta robots and X-Robots-Tag nofollow/noarchive (politeness/robots_meta.py)
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
    # Replay reads pages ahead in a process of its own (replay/reader_child.py);
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
    # A crawl extracts in a process of its own (extraction/process_child.py); False: in
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
# The settings that name a file a feature reads (FeatureSetting), in the table's order.
FILE_SETTINGS = tuple(row for row in OWN_SETTINGS if row.parse is parse_data_path)


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
        if not any(row.name == setting for row in FILE_SETTINGS):
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
    for row in FILE_SETTINGS:
        path = values[row.attr]
        if path is None:
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
