"""``Addon``: everything traverse_crawl adds to a Scrapy project, as one ``ADDONS`` entry.

``ADDONS = {"traverse_crawl.Addon": 100}`` in any project's ``settings.py`` gives every
spider the fetch path, politeness, the egress guard, capture and replay, WARC and the
two-signal stop, with the defaults docs/settings.md lists. A setting the user sets
(``settings.py``, a spider's ``custom_settings``, ``-s``, scrapyd's ``setting=``) wins over
the add-on's default; in the component dictionaries the user's entries are kept and the
add-on only adds the components the user did not name (``None`` included).
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.settings import default_settings as scrapy_defaults
from scrapy.utils.misc import load_object

from traverse_crawl.checks.setting import CHECKS_SETTING
from traverse_crawl.config.extras import require_extra
from traverse_crawl.config.parsers import parse_bool
from traverse_crawl.config.policies import POLICIES
from traverse_crawl.config.settings import DEFAULTS, TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.operations import exit_status, json_log
from traverse_crawl.rendering.addon import update_render_settings
from traverse_crawl.runtime import log_redaction

PRIORITY = "addon"
COOKIES_MIDDLEWARE = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"

# The settings of the BFS frontier itself (its scheduler, no duplicate filter, no
# DepthMiddleware, no Referer) are the traverse spider's: crawl/spider_settings.py.
# A user's own spider keeps Scrapy's.
#
# The Scrapy settings whose value here differs from Scrapy's, beside every TRAVERSE_*
# default (traverse_crawl.config.settings.DEFAULTS, which also holds USER_AGENT,
# ROBOTSTXT_OBEY, DOWNLOAD_TIMEOUT, DOWNLOAD_MAXSIZE, REDIRECT_MAX_TIMES, ...).
SETTINGS: dict[str, Any] = {
    **DEFAULTS,
    # Traverse follows no meta refresh. (It sends no cookies either, but that is the
    # traverse spider's own setting: crawl/spider_settings.py. A user's spider keeps
    # Scrapy's cookies.)
    "METAREFRESH_ENABLED": False,
    "DEFAULT_REQUEST_HEADERS": {"Accept": "text/html,application/xhtml+xml,text/plain,*/*"},
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    # The egress guard pins the addresses it checked in this resolver, so the
    # connection goes to exactly those addresses (no DNS rebinding window). The
    # process reads it before any crawler exists: update_pre_crawler_settings.
    "TWISTED_DNS_RESOLVER": "traverse_crawl.egress.resolver.PinnedResolver",
    "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
    # No local control servers in a crawler meant to run as a service.
    "TELNETCONSOLE_ENABLED": False,
    "REMOTE_CONTROL_ENABLED": False,
    "FEED_EXPORT_ENCODING": "utf-8",
}

# TRAVERSE_PROCESS_TUNING: the crawl process tuned for the traverse spider's workload
# (docs/getting-started.md, "The add-on in your own project"). The project's own
# settings.py opts in; in another project these are Scrapy's unless it opts in too.
PROCESS_TUNING: dict[str, Any] = {
    "LOG_LEVEL": "INFO",
    # Scrapy's in-memory stats without the wrapper it puts around every method call
    # (runtime/stats_collector.py): some fifteen counts a page.
    "STATS_CLASS": "traverse_crawl.runtime.stats_collector.DirectStatsCollector",
    # Scrapy imports every key of EXTENSIONS_BASE to merge it with EXTENSIONS, even one
    # mapped to None: RemoteControl's module imports aiohttp and builds a TLS context
    # (about 0.15 s and several MB in every crawl process), so it is left out of the
    # base itself.
    "EXTENSIONS_BASE": {
        name: order
        for name, order in scrapy_defaults.EXTENSIONS_BASE.items()
        if name != "scrapy.extensions.remote_control.RemoteControl"
    },
}
# With the tuning and cookies off: CookiesMiddleware's module imports tldextract and
# requests (about 60 ms of every crawl process; Scrapy imports every key of
# DOWNLOADER_MIDDLEWARES_BASE, None or not), so it is left out of the base as well.
BASE_WITHOUT_COOKIES = {
    name: order
    for name, order in scrapy_defaults.DOWNLOADER_MIDDLEWARES_BASE.items()
    if name != COOKIES_MIDDLEWARE
}
PROCESS_TUNING_EXTENSIONS: dict[str, int | None] = {
    # Start-up objects to the permanent generation (full collections paused the crawl
    # for 50-250 ms, emptying every download place at high latency); before CoreStats
    # (0), so its full collection is not in the crawl's elapsed time.
    "traverse_crawl.runtime.heap_extension.FrozenStartupHeap": -10,
    # The root logger at what its handlers take: no LogRecord built for a dropped
    # debug line.
    "traverse_crawl.runtime.log_level_extension.UnhandledRecordsSkipped": -5,
    # A freed download place refilled in the turn its response arrives, not on the
    # engine's next-turn timer, behind that turn's page work.
    "traverse_crawl.runtime.refill_extension.RefillAtResponse": 0,
}

# Downloader middlewares, in process_request order; process_response runs bottom-up.
# Ours replace the built-ins that do the same job (each built-in mapped to None, its
# priority taken).
#
#   10  TypedFailureMiddleware  every failed request's exception carries its FetchError
#   20  PageIdMiddleware        the page id of any request that is not a frontier page
#   40  UserinfoMiddleware      user:pass@ in a URL becomes an Authorization header
#   50  ReplayMiddleware        replay mode: serve the store, no network at all
#   90  EgressGuardMiddleware   refuse hosts that resolve to non-public addresses
#  100  RobotsMiddleware        (replaces RobotsTxtMiddleware) Traverse's matcher
#  350  DownloadTimeout         built-in, DOWNLOAD_TIMEOUT per attempt
#  400  DefaultHeaders          built-in, Traverse's Accept header
#  500  UserAgent               built-in
#  540  RenderMiddleware        TRAVERSE_RENDER: mark or escalate pages to Chromium
#                               (added only when pages are rendered: rendering/addon.py)
#  550  RetryMiddleware         (replaces built-in) 429/5xx/network/timeout, jittered backoff
#  590  HttpCompression         (replaces built-in) bodies are hashed after decoding; a
#                               decompression bomb is a typed too-large
#  600  RedirectMiddleware      (replaces built-in) manual, chain recorded, robots per hop
#  650  RevalidateMiddleware    conditional GET from the stored snapshot
#  850  DownloaderStats         (replaces built-in) the same downloader/* counts, byte
#                               sizes added up instead of serialised
#  950  PolitenessMiddleware    per-origin download slots, end-to-start delay
#  960  UnverifiedTlsMiddleware DOWNLOAD_VERIFY_CERTIFICATES=False: warn on each HTTPS page
#
# Off: MetaRefreshMiddleware (Traverse follows none). CookiesMiddleware is Scrapy's, on for
# a user's spider and off for the traverse spider (COOKIES_ENABLED).
DOWNLOADER_MIDDLEWARES: dict[str, int | None] = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": None,
    "scrapy.downloadermiddlewares.stats.DownloaderStats": None,
    "traverse_crawl.fetch.failure_middleware.TypedFailureMiddleware": 10,
    "traverse_crawl.snapshots.capture_middleware.PageIdMiddleware": 20,
    "traverse_crawl.fetch.userinfo_middleware.UserinfoMiddleware": 40,
    "traverse_crawl.replay.middleware.ReplayMiddleware": 50,
    "traverse_crawl.egress.middleware.EgressGuardMiddleware": 90,
    "traverse_crawl.politeness.robots_middleware.RobotsMiddleware": 100,
    "traverse_crawl.politeness.retry_middleware.RetryMiddleware": 550,
    "traverse_crawl.fetch.compression_middleware.HttpCompressionMiddleware": 590,
    "traverse_crawl.politeness.redirect_middleware.RedirectMiddleware": 600,
    "traverse_crawl.snapshots.revalidate_middleware.RevalidateMiddleware": 650,
    "traverse_crawl.fetch.stats_middleware.DownloaderStats": 850,
    "traverse_crawl.politeness.delay_middleware.PolitenessMiddleware": 950,
    "traverse_crawl.fetch.tls_middleware.UnverifiedTlsMiddleware": 960,
}

# Spider middlewares, for every spider:
#
#   50  HttpErrorMiddleware     (replaces built-in) its HttpError carries the typed error;
#                               one no errback took is a WARNING with its kind
#   60  UnhandledFailureLog     marks the requests a spider yields with no errback: their
#                               failure is a WARNING with its URL and kind
#  950  CaptureMiddleware       each page response's snapshot and sourceRef before its
#                               callback runs (stored in capture mode), and that
#                               sourceRef on the items the callback yields
SPIDER_MIDDLEWARES: dict[str, int | None] = {
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
    "traverse_crawl.fetch.http_error_middleware.HttpErrorMiddleware": 50,
    "traverse_crawl.fetch.failure_middleware.UnhandledFailureLog": 60,
    "traverse_crawl.snapshots.capture_middleware.CaptureMiddleware": 950,
}

# The request target sent is the WHATWG URL's path and query byte for byte
# (docs/architecture.md, "URLs on the wire"): Scrapy's HTTP/1.1 handler, minus Twisted's
# urllib re-serialisation, with a cap on response header size (TRAVERSE_MAX_HEADER_SIZE).
# With rendering on, scrapy-playwright's handler (a subclass of it) takes its place.
DOWNLOAD_HANDLER = "traverse_crawl.fetch.request.ExactTargetDownloadHandler"

# Item pipelines: hold each item until the snapshot it names is durable (capture mode),
# keep the outcome in the JOBDIR journal (with JOBDIR) or commit it to Redis (with
# REDIS_URL: DISTRIBUTED below), then write the manifest (with REDIS_URL, the worker
# that finishes a seed writes it).
ITEM_PIPELINES: dict[str, int | None] = {
    "traverse_crawl.snapshots.pipeline.SnapshotStorePipeline": 300,
    "traverse_crawl.jobdir.pipeline.JournalPipeline": 800,
    "traverse_crawl.manifests.pipeline.ManifestPipeline": 900,
}

EXTENSIONS: dict[str, int | None] = {
    # First SIGINT/SIGTERM: nothing new starts; second: manifests written, then exit.
    "traverse_crawl.runtime.stop.TwoSignalStop": 100,
    "traverse_crawl.crawl.progress_extension.ProgressExtension": 510,
    # TRAVERSE_STATS_FILE: the final stats and each seed's totals, once the engine stopped.
    "traverse_crawl.operations.stats_file.StatsFileExtension": 520,
    # Something lost (traverse/lost, a feed not stored): `scrapy crawl` exits 1.
    "traverse_crawl.operations.exit_status.LostResultsExitStatus": 530,
    # TRAVERSE_LOG_FORMAT=json: the seed id of the request a log line is about.
    "traverse_crawl.operations.json_log.SeedNames": 540,
}


# What REDIS_URL adds: each page's outcome committed to Redis once its snapshot is
# stored (after the store pipeline), and the politeness every worker shares, which the
# middlewares ask the crawler for (an extension: built before them). Only then, so a
# single-process crawl imports nothing of traverse_crawl/distributed/, nor redis.
DISTRIBUTED: dict[str, dict[str, int | None]] = {
    "ITEM_PIPELINES": {"traverse_crawl.distributed.pipeline.CommitPipeline": 850},
    "EXTENSIONS": {"traverse_crawl.distributed.shared_politeness.SharedPoliteness": 100},
}

# What TRAVERSE_WARC_DIR adds: every exchange of a capture also goes to WARC files. Only
# then, so a crawl without it imports nothing of warcio.
WARC: dict[str, dict[str, int | None]] = {
    "EXTENSIONS": {"traverse_crawl.warc.extension.WarcWriterExtension": 500},
}

# What TRAVERSE_METRICS_PORT adds: the Prometheus endpoint. Only then, so a crawl without
# it imports nothing of prometheus_client.
METRICS: dict[str, dict[str, int | None]] = {
    "EXTENSIONS": {"traverse_crawl.operations.metrics.MetricsExtension": 520},
}


# What TRAVERSE_CHECKS adds: each seed's data-quality checks. Only then, so a crawl
# without it imports nothing of traverse_crawl/checks/ but checks/setting.py (which reads
# the checks file, and the extraction file through extraction/setting.py, as the config
# is parsed: imported here so that every crawl with the add-on reads them).
CHECKS: dict[str, dict[str, int | None]] = {
    "EXTENSIONS": {"traverse_crawl.checks.extension.ChecksExtension": 515},
}


class Addon:
    """The Scrapy add-on of traverse_crawl (docs/getting-started.md)."""

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        # The process reads TWISTED_DNS_RESOLVER and LOG_LEVEL before any crawler
        # exists; every plain default is set here too, so the process and its
        # crawlers see the same values.
        _set_defaults(settings)
        # Before the process builds its log handler: JSON from the first line.
        json_log.install(settings)
        # Then, around whichever formatter that gives, before the process logs
        # anything: a password in a URL (a seed's, REDIS_URL's, a link's in an item
        # dump) is never printed.
        log_redaction.install()
        # A bad setting: one line naming it and exit status 2, for any spider's crawl.
        exit_status.check_at_command_line(settings)

    def update_settings(self, settings: BaseSettings) -> None:
        _set_defaults(settings)
        log_redaction.install()
        # A bad value stops the crawl here, before any component starts, for any
        # spider (the crawl command checks the traverse spider's even earlier).
        config = TraverseConfig.from_settings(settings)
        tables = [
            ("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARES),
            ("DOWNLOADER_MIDDLEWARES", DOWNLOADER_MIDDLEWARES),
            ("ITEM_PIPELINES", ITEM_PIPELINES),
            ("EXTENSIONS", EXTENSIONS),
        ]
        if config.redis.enabled:
            require_extra("REDIS_URL", "redis")
            tables += DISTRIBUTED.items()
        if config.warc_dir:
            require_extra("TRAVERSE_WARC_DIR", "warc")
            tables += WARC.items()
        if config.metrics_port:
            require_extra("TRAVERSE_METRICS_PORT", "metrics")
            tables += METRICS.items()
        if CHECKS_SETTING.of(config) is not None:
            tables += CHECKS.items()
        if config.process_tuning:
            tables.append(("EXTENSIONS", PROCESS_TUNING_EXTENSIONS))
        for name, table in tables:
            for path, order in table.items():
                settings.setdefault_in_component_priority_dict(name, load_object(path), order)
        handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
        for scheme in ("http", "https"):
            handlers.setdefault(scheme, DOWNLOAD_HANDLER)
        set_merged(settings, "DOWNLOAD_HANDLERS", handlers)
        update_render_settings(settings)


def _set_defaults(settings: BaseSettings) -> None:
    # At the add-on's priority: any value the user set (project, spider, cmdline) is
    # above it and stays.
    for name, value in SETTINGS.items():
        settings.set(name, value, priority=PRIORITY)
    # TRAVERSE_POLICY's values at the same priority as the other defaults, so a setting
    # the user sets still wins over the preset (an unknown policy is refused later,
    # naming the setting: TraverseConfig).
    policy = str(settings.get("TRAVERSE_POLICY") or "").strip().lower()
    for name, value in POLICIES.get(policy, {}).items():
        settings.set(name, value, priority=PRIORITY)
    if _process_tuning(settings):
        for name, value in PROCESS_TUNING.items():
            settings.set(name, value, priority=PRIORITY)
        if not settings.getbool("COOKIES_ENABLED"):
            settings.set("DOWNLOADER_MIDDLEWARES_BASE", BASE_WITHOUT_COOKIES, priority=PRIORITY)


def _process_tuning(settings: BaseSettings) -> bool:
    try:
        return parse_bool("TRAVERSE_PROCESS_TUNING", settings.get("TRAVERSE_PROCESS_TUNING", False))
    except ConfigError:
        return False  # refused with its name once the config is read (update_settings)


def set_merged(settings: BaseSettings, name: str, value: Any) -> None:
    """Write ``value``, merged from the setting's current one, at that value's priority.

    The merge kept what the user set; writing at the user's priority (or the add-on's,
    if higher) is what makes it take effect.
    """
    current = settings.getpriority(name) or 0
    settings.set(name, value, priority=max(current, SETTINGS_PRIORITIES[PRIORITY]))
