"""The add-on alone wires a crawler as the project does; what the user sets wins.

Each crawler is built with ``scrapy.utils.test.get_crawler`` from nothing but
``ADDONS`` (and the user's own settings, at project priority): the settings the
crawler ends with are what Scrapy builds its components from.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from scrapy import Spider
from scrapy.settings import BaseSettings
from scrapy.settings import default_settings as scrapy_defaults
from scrapy.utils.conf import build_component_list
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from traverse_crawl.config.settings import DEFAULTS
from traverse_crawl.spider import TraverseSpider

ADDONS = {"ADDONS": {"traverse_crawl.Addon": 100}}
# What this project's own settings.py adds to the add-on.
TUNED = {"TRAVERSE_PROCESS_TUNING": True}
COOKIES = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
TUNING_EXTENSIONS = [
    "traverse_crawl.runtime.heap_extension.FrozenStartupHeap",
    "traverse_crawl.runtime.log_level_extension.UnhandledRecordsSkipped",
    "traverse_crawl.runtime.refill_extension.RefillAtResponse",
]
PLAIN_HANDLER = "traverse_crawl.fetch.request.ExactTargetDownloadHandler"
RENDER_HANDLER = "traverse_crawl.rendering.handler.RenderDownloadHandler"
RENDER_MIDDLEWARE = "traverse_crawl.rendering.middleware.RenderMiddleware"
HTTP11 = "scrapy.core.downloader.handlers.http11.HTTP11DownloadHandler"


def settings_of(user: dict[str, Any] | None = None, spider: type[Spider] | None = None) -> Any:
    return get_crawler(spider, settings_dict={**ADDONS, **(user or {})}).settings


def path(component: Any) -> str:
    component = load_object(component)
    return f"{component.__module__}.{component.__qualname__}"


def enabled(settings: BaseSettings, name: str) -> list[str]:
    """The components Scrapy builds for ``name``, in order."""
    merged = settings.get_component_priority_dict_with_base(name)
    return [path(key) for key in build_component_list(merged)]


def entries(settings: BaseSettings, name: str) -> dict[str, Any]:
    """The ``name`` dictionary itself (not its base), keyed by import path."""
    return {path(key): value for key, value in settings.getdict(name).items()}


def test_the_downloader_middlewares_run_in_the_documented_order():
    """A user's spider keeps Scrapy's cookies; the tuned traverse spider's process does
    not even import their middleware."""
    user_spider = enabled(settings_of(), "DOWNLOADER_MIDDLEWARES")
    assert (
        user_spider.index(COOKIES)
        == user_spider.index("traverse_crawl.snapshots.revalidate_middleware.RevalidateMiddleware")
        + 1
    )
    user_spider.remove(COOKIES)
    traverse = enabled(settings_of(TUNED, TraverseSpider), "DOWNLOADER_MIDDLEWARES")
    assert traverse == user_spider
    assert traverse == [
        "traverse_crawl.fetch.failure_middleware.TypedFailureMiddleware",
        "traverse_crawl.snapshots.capture_middleware.PageIdMiddleware",
        "traverse_crawl.fetch.userinfo_middleware.UserinfoMiddleware",
        "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware",
        "traverse_crawl.replay.middleware.ReplayMiddleware",
        "traverse_crawl.egress.middleware.EgressGuardMiddleware",
        "traverse_crawl.politeness.robots_middleware.RobotsMiddleware",
        "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware",
        "scrapy.downloadermiddlewares.downloadtimeout.DownloadTimeoutMiddleware",
        "scrapy.downloadermiddlewares.defaultheaders.DefaultHeadersMiddleware",
        "scrapy.downloadermiddlewares.useragent.UserAgentMiddleware",
        "traverse_crawl.politeness.retry_middleware.RetryMiddleware",
        "traverse_crawl.fetch.compression_middleware.HttpCompressionMiddleware",
        "traverse_crawl.politeness.redirect_middleware.RedirectMiddleware",
        "traverse_crawl.snapshots.revalidate_middleware.RevalidateMiddleware",
        "scrapy.downloadermiddlewares.httpproxy.HttpProxyMiddleware",
        "traverse_crawl.fetch.stats_middleware.DownloaderStats",
        "scrapy.downloadermiddlewares.httpcache.HttpCacheMiddleware",
        "traverse_crawl.politeness.delay_middleware.PolitenessMiddleware",
        "traverse_crawl.fetch.tls_middleware.UnverifiedTlsMiddleware",
    ]


def test_each_replacement_takes_the_priority_of_the_built_in_it_turns_off():
    settings = settings_of()
    ours = entries(settings, "DOWNLOADER_MIDDLEWARES")
    base = {path(k): v for k, v in settings.getdict("DOWNLOADER_MIDDLEWARES_BASE").items()}
    for builtin, replacement in [
        ("robotstxt.RobotsTxtMiddleware", "robots_middleware.RobotsMiddleware"),
        ("retry.RetryMiddleware", "retry_middleware.RetryMiddleware"),
        ("redirect.RedirectMiddleware", "redirect_middleware.RedirectMiddleware"),
    ]:
        builtin = f"scrapy.downloadermiddlewares.{builtin}"
        assert ours[builtin] is None
        assert ours[f"traverse_crawl.politeness.{replacement}"] == base[builtin]
    compression = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"
    assert ours[compression] is None
    assert (
        ours["traverse_crawl.fetch.compression_middleware.HttpCompressionMiddleware"]
        == (base[compression])
    )
    assert ours["scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"] is None
    # The tuned traverse spider's: left out of the base itself (Scrapy imports every
    # base key, None or not).
    tuned = settings_of(TUNED, TraverseSpider)
    tuned_base = {path(k) for k in tuned.getdict("DOWNLOADER_MIDDLEWARES_BASE")}
    assert COOKIES not in tuned_base
    assert COOKIES not in enabled(tuned, "DOWNLOADER_MIDDLEWARES")
    spider = entries(settings, "SPIDER_MIDDLEWARES")
    spider_base = {path(k): v for k, v in settings.getdict("SPIDER_MIDDLEWARES_BASE").items()}
    http_error = "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware"
    assert spider[http_error] is None
    assert (
        spider["traverse_crawl.fetch.http_error_middleware.HttpErrorMiddleware"]
        == (spider_base[http_error])
    )


def test_the_spider_middlewares_that_would_change_the_bfs_are_off_for_the_traverse_spider():
    settings = settings_of(spider=TraverseSpider)
    assert enabled(settings, "SPIDER_MIDDLEWARES") == [
        "scrapy.spidermiddlewares.start.StartSpiderMiddleware",
        "traverse_crawl.fetch.http_error_middleware.HttpErrorMiddleware",
        "traverse_crawl.fetch.failure_middleware.UnhandledFailureLog",
        "traverse_crawl.snapshots.capture_middleware.CaptureMiddleware",
    ]


def test_a_users_own_spider_keeps_scrapys_scheduler_dupefilter_depth_and_state():
    """The add-on makes every fetch polite and safe; the BFS frontier's scheduling is the
    traverse spider's, so a plain spider still deduplicates, obeys DEPTH_LIMIT and keeps
    its JOBDIR state."""
    settings = settings_of()
    for name in ("SCHEDULER", "DUPEFILTER_CLASS", "SCHEDULER_MEMORY_QUEUE", "CONCURRENT_ITEMS"):
        assert settings[name] == getattr(scrapy_defaults, name), name
    spider_middlewares = enabled(settings, "SPIDER_MIDDLEWARES")
    assert "scrapy.spidermiddlewares.depth.DepthMiddleware" in spider_middlewares
    assert "scrapy.spidermiddlewares.referer.RefererMiddleware" in spider_middlewares
    assert "scrapy.extensions.spiderstate.SpiderState" in enabled(settings, "EXTENSIONS")


def test_a_scheduler_the_user_sets_wins_over_the_traverse_spiders():
    settings = settings_of({"SCHEDULER": "scrapy.core.scheduler.Scheduler"}, TraverseSpider)
    assert settings["SCHEDULER"] == "scrapy.core.scheduler.Scheduler"
    assert settings["DUPEFILTER_CLASS"] == "scrapy.dupefilters.BaseDupeFilter"


def test_pipelines_extensions_handler_and_scheduler():
    settings = settings_of(TUNED, TraverseSpider)
    assert enabled(settings, "ITEM_PIPELINES") == [
        "traverse_crawl.snapshots.pipeline.SnapshotStorePipeline",
        "traverse_crawl.jobdir.pipeline.JournalPipeline",
        "traverse_crawl.manifests.pipeline.ManifestPipeline",
    ]
    extensions = enabled(settings, "EXTENSIONS")
    ours = [name for name in extensions if name.startswith("traverse_crawl.")]
    assert ours == [
        *TUNING_EXTENSIONS,
        "traverse_crawl.runtime.stop.TwoSignalStop",
        "traverse_crawl.crawl.progress_extension.ProgressExtension",
        "traverse_crawl.operations.stats_file.StatsFileExtension",
        "traverse_crawl.operations.exit_status.LostResultsExitStatus",
        "traverse_crawl.operations.json_log.SeedNames",
    ]
    assert "scrapy.extensions.spiderstate.SpiderState" not in extensions
    # Left out of the base itself: Scrapy imports every base key, None or not.
    remote = "scrapy.extensions.remote_control.RemoteControl"
    assert remote not in settings.getdict("EXTENSIONS_BASE")
    assert not settings.getbool("TELNETCONSOLE_ENABLED")
    assert not settings.getbool("REMOTE_CONTROL_ENABLED")
    handlers = settings.get_component_priority_dict_with_base("DOWNLOAD_HANDLERS")
    assert (handlers["http"], handlers["https"]) == (PLAIN_HANDLER, PLAIN_HANDLER)
    assert settings["SCHEDULER"] == "traverse_crawl.crawl.scheduler.MemoryScheduler"
    assert settings["DUPEFILTER_CLASS"] == "scrapy.dupefilters.BaseDupeFilter"
    assert settings["SCHEDULER_PRIORITY_QUEUE"] == "scrapy.pqueues.DownloaderAwarePriorityQueue"
    assert settings["SCHEDULER_MEMORY_QUEUE"] == "scrapy.squeues.FifoMemoryQueue"


def test_redis_url_adds_the_commit_pipeline_and_the_shared_politeness():
    """A worker of a distributed crawl commits each page to Redis after its snapshot is
    stored, and its middlewares share politeness through Redis; without REDIS_URL
    neither is there (test_pipelines_extensions_handler_and_scheduler)."""
    settings = settings_of({"REDIS_URL": "redis://127.0.0.1:1/0"}, TraverseSpider)
    assert enabled(settings, "ITEM_PIPELINES") == [
        "traverse_crawl.snapshots.pipeline.SnapshotStorePipeline",
        "traverse_crawl.jobdir.pipeline.JournalPipeline",
        "traverse_crawl.distributed.pipeline.CommitPipeline",
        "traverse_crawl.manifests.pipeline.ManifestPipeline",
    ]
    shared = "traverse_crawl.distributed.shared_politeness.SharedPoliteness"
    assert shared in enabled(settings, "EXTENSIONS")


def test_traverse_warc_dir_adds_the_warc_writer_extension(tmp_path):
    """Without TRAVERSE_WARC_DIR it is not there at all
    (test_pipelines_extensions_handler_and_scheduler), so its module, and warcio, are
    not imported."""
    # In live mode the extension is listed but stays off: no writer process starts here.
    user = {"TRAVERSE_WARC_DIR": str(tmp_path / "warc"), "TRAVERSE_MODE": "live"}
    settings = settings_of(user, TraverseSpider)
    extensions = enabled(settings, "EXTENSIONS")
    warc = "traverse_crawl.warc.extension.WarcWriterExtension"
    progress = "traverse_crawl.crawl.progress_extension.ProgressExtension"
    assert extensions.index("traverse_crawl.runtime.stop.TwoSignalStop") < extensions.index(warc)
    assert extensions.index(warc) < extensions.index(progress)


def test_plain_values_and_every_default():
    settings = settings_of(TUNED, TraverseSpider)
    for name, value in {**DEFAULTS, **TUNED}.items():
        assert settings[name] == value, name
    assert settings["TWISTED_DNS_RESOLVER"] == "traverse_crawl.egress.resolver.PinnedResolver"
    assert settings["TWISTED_REACTOR"] == "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
    assert not settings.getbool("COOKIES_ENABLED")
    assert not settings.getbool("METAREFRESH_ENABLED")
    assert settings.getdict("DEFAULT_REQUEST_HEADERS") == {
        "Accept": "text/html,application/xhtml+xml,text/plain,*/*"
    }
    assert (
        settings.getint("CONCURRENT_REQUESTS"),
        settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"),
        settings.getint("CONCURRENT_ITEMS"),
    ) == (16, 8, 2)
    assert (settings["FEED_EXPORT_ENCODING"], settings["LOG_LEVEL"]) == ("utf-8", "INFO")


def test_the_process_gets_the_resolver_and_log_level_before_any_crawler():
    from scrapy.crawler import AsyncCrawlerRunner
    from scrapy.settings import Settings

    runner = AsyncCrawlerRunner(Settings({**ADDONS, **TUNED}))
    assert runner.settings["TWISTED_DNS_RESOLVER"] == (
        "traverse_crawl.egress.resolver.PinnedResolver"
    )
    assert runner.settings["LOG_LEVEL"] == "INFO"
    assert AsyncCrawlerRunner(Settings(ADDONS)).settings["LOG_LEVEL"] == "DEBUG"  # Scrapy's


@pytest.mark.parametrize("spider", [None, TraverseSpider])
def test_a_project_that_does_not_opt_in_keeps_scrapys_process(spider):
    """Stats class, log level, the base dictionaries and no process-wide extension:
    what Scrapy gives, for the traverse spider too when its project did not opt in."""
    settings = settings_of(spider=spider)
    assert settings["STATS_CLASS"] == scrapy_defaults.STATS_CLASS
    assert settings["LOG_LEVEL"] == scrapy_defaults.LOG_LEVEL
    assert settings.getdict("EXTENSIONS_BASE") == scrapy_defaults.EXTENSIONS_BASE
    assert settings.getdict("DOWNLOADER_MIDDLEWARES_BASE") == (
        scrapy_defaults.DOWNLOADER_MIDDLEWARES_BASE
    )
    extensions = enabled(settings, "EXTENSIONS")
    assert not set(TUNING_EXTENSIONS) & set(extensions)
    assert "traverse_crawl.runtime.stop.TwoSignalStop" in extensions
    # The traverse spider sends no cookies, a user's spider Scrapy's.
    assert settings.getbool("COOKIES_ENABLED") is (spider is None)


def test_a_user_spider_of_a_project_that_opts_in_is_tuned_and_keeps_its_cookies():
    settings = settings_of(TUNED)
    assert settings["STATS_CLASS"] == "traverse_crawl.runtime.stats_collector.DirectStatsCollector"
    assert set(TUNING_EXTENSIONS) <= set(enabled(settings, "EXTENSIONS"))
    assert settings.getbool("COOKIES_ENABLED")
    assert COOKIES in enabled(settings, "DOWNLOADER_MIDDLEWARES")


def test_a_bad_tuning_value_is_refused_naming_the_setting():
    from traverse_crawl.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        settings_of({"TRAVERSE_PROCESS_TUNING": "sometimes"})
    assert caught.value.name == "TRAVERSE_PROCESS_TUNING"


class CustomSpider(Spider):
    name = "custom"
    custom_settings = {"CONCURRENT_REQUESTS": 4, "TRAVERSE_MAX_PAGES": 7}


def test_what_the_user_sets_wins_over_the_defaults():
    settings = settings_of({"TRAVERSE_MIN_DELAY": 5, "USER_AGENT": "mine/1", "LOG_LEVEL": "DEBUG"})
    assert settings.getfloat("TRAVERSE_MIN_DELAY") == 5
    assert (settings["USER_AGENT"], settings["LOG_LEVEL"]) == ("mine/1", "DEBUG")
    spider = settings_of(spider=CustomSpider)
    assert (spider.getint("CONCURRENT_REQUESTS"), spider.getint("TRAVERSE_MAX_PAGES")) == (4, 7)


class UserMiddleware:
    pass


def test_the_users_components_are_kept_beside_ours():
    user = {
        "DOWNLOADER_MIDDLEWARES": {
            "tests.component.test_addon.UserMiddleware": 543,
            # Named by the user, even as None: the add-on leaves the entry alone.
            "traverse_crawl.fetch.tls_middleware.UnverifiedTlsMiddleware": None,
        },
        "EXTENSIONS": {"traverse_crawl.runtime.refill_extension.RefillAtResponse": None},
        "DOWNLOAD_HANDLERS": {"https": HTTP11},
    }
    settings = settings_of(user)
    middlewares = enabled(settings, "DOWNLOADER_MIDDLEWARES")
    assert "tests.component.test_addon.UserMiddleware" in middlewares
    assert "traverse_crawl.politeness.delay_middleware.PolitenessMiddleware" in middlewares
    assert "traverse_crawl.fetch.tls_middleware.UnverifiedTlsMiddleware" not in middlewares
    extensions = enabled(settings, "EXTENSIONS")
    assert "traverse_crawl.runtime.refill_extension.RefillAtResponse" not in extensions
    assert "traverse_crawl.runtime.stop.TwoSignalStop" in extensions
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    assert handlers == {"https": HTTP11, "http": PLAIN_HANDLER}


def test_a_project_that_names_the_cookies_middleware_gets_cookies():
    cookies = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
    settings = settings_of({"DOWNLOADER_MIDDLEWARES": {cookies: 700}, "COOKIES_ENABLED": True})
    middlewares = enabled(settings, "DOWNLOADER_MIDDLEWARES")
    assert cookies in middlewares
    assert middlewares.index(cookies) < middlewares.index(
        "traverse_crawl.politeness.delay_middleware.PolitenessMiddleware"
    )
    assert settings.getbool("COOKIES_ENABLED")


def test_a_bad_setting_stops_any_crawler_at_start_up():
    from traverse_crawl.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        settings_of({"TRAVERSE_MIN_DELAY": "1e308"})
    assert caught.value.name == "TRAVERSE_MIN_DELAY"


needs_playwright = pytest.mark.skipif(
    importlib.util.find_spec("scrapy_playwright") is None, reason="scrapy-playwright"
)
# A remote browser: the add-on wires rendering without launching one here.
REMOTE = {"PLAYWRIGHT_CDP_URL": "ws://127.0.0.1:9/"}


@pytest.mark.parametrize(
    ("user", "rendered"),
    [
        ({"TRAVERSE_RENDER": "never"}, False),
        ({"TRAVERSE_RENDER": "always", "TRAVERSE_MODE": "replay"}, False),
        pytest.param({"TRAVERSE_RENDER": "always"}, True, marks=needs_playwright),
        pytest.param({"TRAVERSE_RENDER": "on-shell-warning"}, True, marks=needs_playwright),
    ],
)
def test_rendering_is_wired_only_when_pages_are_rendered(user, rendered):
    settings = settings_of({**REMOTE, **user})
    middlewares = enabled(settings, "DOWNLOADER_MIDDLEWARES")
    assert (RENDER_MIDDLEWARE in middlewares) is rendered
    handler = settings.get_component_priority_dict_with_base("DOWNLOAD_HANDLERS")["https"]
    assert handler == (RENDER_HANDLER if rendered else PLAIN_HANDLER)
    assert (settings.get("PLAYWRIGHT_BROWSER_TYPE") == "chromium") is rendered
    if rendered:
        assert (
            middlewares.index(RENDER_MIDDLEWARE)
            == middlewares.index("traverse_crawl.politeness.retry_middleware.RetryMiddleware") - 1
        )


def test_a_project_that_enables_cookies_gets_scrapys_cookie_handling_back():
    cookies = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
    settings = settings_of({"COOKIES_ENABLED": True})
    assert cookies in enabled(settings, "DOWNLOADER_MIDDLEWARES")
    assert settings.getbool("COOKIES_ENABLED")


def test_the_traverse_spider_sends_no_cookies_whatever_the_project_enables():
    cookies = "scrapy.downloadermiddlewares.cookies.CookiesMiddleware"
    settings = settings_of({"COOKIES_ENABLED": True, **TUNED}, spider=TraverseSpider)
    assert not settings.getbool("COOKIES_ENABLED")
    assert cookies not in enabled(settings, "DOWNLOADER_MIDDLEWARES")
    # Untuned, the middleware is listed, and off: Scrapy's own COOKIES_ENABLED check.
    assert not settings_of({"COOKIES_ENABLED": True}, spider=TraverseSpider).getbool(
        "COOKIES_ENABLED"
    )
