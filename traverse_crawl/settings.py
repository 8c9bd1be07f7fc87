"""Scrapy settings of the traverse_crawl project (CONTRACT §2).

Every setting traverse_crawl reads — the TRAVERSE_* ones and the Scrapy ones whose
project default differs from Scrapy's (``USER_AGENT``, ``ROBOTSTXT_OBEY``,
``DOWNLOAD_TIMEOUT``, ``DOWNLOAD_MAXSIZE``, ``REDIRECT_MAX_TIMES``, ...) — has its
default in one place, ``traverse_crawl.config.settings.FIELDS``; this module sets them
all from there. docs/settings.md lists each with its value.
"""

from scrapy.settings import default_settings as _scrapy_defaults

from traverse_crawl.config import settings as _config

BOT_NAME = "traverse_crawl"
SPIDER_MODULES = ["traverse_crawl.crawl.spider"]
NEWSPIDER_MODULE = "traverse_crawl.crawl.spider"
COMMANDS_MODULE = "traverse_crawl.commands"

globals().update(_config.DEFAULTS)

# Traverse sends no cookies and follows no meta refresh.
COOKIES_ENABLED = False
METAREFRESH_ENABLED = False
DEFAULT_REQUEST_HEADERS = {"Accept": "text/html,application/xhtml+xml,text/plain,*/*"}

# The frontier deduplicates on WHATWG hrefs with the query verbatim; Scrapy's
# fingerprint sorts query parameters (SPEC §17b), so every request is dont_filter.
# Fairness between origins: the scheduler hands out requests of the origin slot
# with the fewest active downloads, so one slow origin never starves another.
# JOBDIR holds the frontier's journal only (traverse_crawl/jobdir/pipeline.py): the
# scheduler keeps its queue in memory, every request is dont_filter (no
# requests.seen), and Scrapy's pickled spider.state is not written.
SCHEDULER = "traverse_crawl.crawl.scheduler.MemoryScheduler"
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"
SCHEDULER_PRIORITY_QUEUE = "scrapy.pqueues.DownloaderAwarePriorityQueue"
# Breadth first: requests have priority -depth (few distinct levels: Scrapy keeps
# one queue per level) and leave each level in the order they were admitted.
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
# Scrapy starts CONCURRENT_ITEMS worker tasks per response to process its
# output (the default 100 dominated the CPU profile). Each response yields one
# item, then its new requests: two workers let the requests go on while the
# item's snapshot is written.
CONCURRENT_ITEMS = 2

# Spider middlewares that would change the crawl: Traverse sends no Referer; the
# frontier owns depth (the spider sets Scrapy's ``depth`` key to the BFS depth,
# which DepthMiddleware would recompute from the callback's response); and a
# request dropped silently (URLLENGTH_LIMIT) would leave its page unrecorded.
# MetaCopyDetection warns about response.meta copied into new requests, which the
# spider never does (it builds each request's meta), and wrapped every output.
SPIDER_MIDDLEWARES = {
    "scrapy.spidermiddlewares.referer.RefererMiddleware": None,
    "scrapy.spidermiddlewares.depth.DepthMiddleware": None,
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
}

# Downloader middlewares, in process_request order. Ours replace the built-ins
# that do the same job (STYLE §4); process_response runs bottom-up.
#
#   40  UserinfoMiddleware      user:pass@ in a URL becomes an Authorization header
#   50  ReplayMiddleware        replay mode: serve the store, no network at all
#   90  EgressGuardMiddleware   refuse hosts that resolve to non-public addresses
#  100  RobotsMiddleware        (replaces RobotsTxtMiddleware) Traverse's matcher
#  350  DownloadTimeout         built-in, DOWNLOAD_TIMEOUT per attempt
#  400  DefaultHeaders          built-in, Traverse's Accept header
#  500  UserAgent               built-in
#  540  RenderMiddleware        TRAVERSE_RENDER: mark or escalate pages to Chromium
#                               (installed by RenderAddon only when pages are rendered)
#  550  RetryMiddleware         (replaces built-in) 429/5xx/network/timeout, jittered backoff
#  590  HttpCompression         built-in; bodies are hashed after decoding
#  600  RedirectMiddleware      (replaces built-in) manual, chain recorded, robots per hop
#  650  RevalidateMiddleware    conditional GET from the stored snapshot
#  950  PolitenessMiddleware    per-origin download slots, end-to-start delay
#  960  UnverifiedTlsMiddleware DOWNLOAD_VERIFY_CERTIFICATES=False: warn on each HTTPS page
DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
    "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "traverse_crawl.fetch.userinfo_middleware.UserinfoMiddleware": 40,
    "traverse_crawl.replay.middleware.ReplayMiddleware": 50,
    "traverse_crawl.egress.middleware.EgressGuardMiddleware": 90,
    "traverse_crawl.politeness.robots_middleware.RobotsMiddleware": 100,
    "traverse_crawl.politeness.retry_middleware.RetryMiddleware": 550,
    "traverse_crawl.politeness.redirect_middleware.RedirectMiddleware": 600,
    "traverse_crawl.snapshots.revalidate_middleware.RevalidateMiddleware": 650,
    "traverse_crawl.politeness.delay_middleware.PolitenessMiddleware": 950,
    "traverse_crawl.fetch.tls_middleware.UnverifiedTlsMiddleware": 960,
}

# The request target sent is the WHATWG URL's path and query byte for byte
# (issue 11): Scrapy's HTTP/1.1 handler, minus Twisted's urllib re-serialisation,
# with a cap on response header size (TRAVERSE_MAX_HEADER_SIZE, issue 10).
# The render add-on swaps in its subclass of scrapy-playwright's handler.
DOWNLOAD_HANDLERS = {
    "http": "traverse_crawl.fetch.request.ExactTargetDownloadHandler",
    "https": "traverse_crawl.fetch.request.ExactTargetDownloadHandler",
}

# Item pipelines: store every snapshot (capture mode), keep the outcome in the
# JOBDIR journal (with JOBDIR), then write the manifest. With REDIS_URL the spider
# adds the distributed crawl's components (traverse_crawl/config/distributed.py):
# CommitPipeline (850) commits the outcome to Redis, and the worker that finishes
# a seed writes its manifest.
ITEM_PIPELINES = {
    "traverse_crawl.snapshots.pipeline.SnapshotStorePipeline": 300,
    "traverse_crawl.jobdir.pipeline.JournalPipeline": 800,
    "traverse_crawl.manifests.pipeline.ManifestPipeline": 900,
}

# The render add-on installs scrapy-playwright's download handler and the render
# middleware only when TRAVERSE_RENDER is not "never" (and not in replay), so no
# browser starts, and Playwright is not imported, otherwise.
ADDONS = {"traverse_crawl.rendering.addon.RenderAddon": 0}

# The egress guard pins the addresses it checked in this resolver, so the
# connection goes to exactly those addresses (no DNS rebinding window).
TWISTED_DNS_RESOLVER = "traverse_crawl.egress.resolver.PinnedResolver"

TWISTED_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
# No local control servers in a crawler meant to run as a service. Scrapy 2.19 imports
# every key of EXTENSIONS_BASE to merge it with EXTENSIONS, even one mapped to None:
# RemoteControl's module imports aiohttp and builds a TLS context (about 0.15 s and
# several MB in every crawl process), so it is left out of the base itself.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
EXTENSIONS_BASE = {
    name: order
    for name, order in _scrapy_defaults.EXTENSIONS_BASE.items()
    if name != "scrapy.extensions.remote_control.RemoteControl"
}
EXTENSIONS = {
    # Start-up objects to the permanent generation (GC pauses of 50-250 ms, issue 17);
    # before CoreStats (0), so its full collection is not in the crawl's elapsed time.
    "traverse_crawl.runtime.heap_extension.FrozenStartupHeap": -10,
    # The root logger at what its handlers take: no LogRecord built for a dropped
    # debug line (issue 17).
    "traverse_crawl.runtime.log_level_extension.UnhandledRecordsSkipped": -5,
    # A freed download place refilled in the turn its response arrives, not on the
    # engine's next-turn timer (issue 17: latency).
    "traverse_crawl.runtime.refill_extension.RefillAtResponse": 0,
    # TRAVERSE_WARC_DIR: every exchange of a capture also goes to WARC files.
    "traverse_crawl.warc.extension.WarcWriterExtension": 500,
    "scrapy.extensions.spiderstate.SpiderState": None,
    "traverse_crawl.crawl.progress_extension.ProgressExtension": 510,
}
FEED_EXPORT_ENCODING = "utf-8"
LOG_LEVEL = "INFO"
