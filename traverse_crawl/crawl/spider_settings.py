"""The settings the ``traverse`` spider (and any subclass) runs with, beside the add-on's.

The add-on gives every spider the polite, safe fetch path; these belong to the BFS
frontier itself, so a user's own spider keeps Scrapy's scheduler, duplicate filter,
``DepthMiddleware`` and ``JOBDIR`` state. A value the user set (``settings.py``,
``custom_settings``, ``-s``) wins over each of them.
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

SETTINGS: dict[str, Any] = {
    # The frontier deduplicates on WHATWG hrefs with the query verbatim; Scrapy's
    # fingerprint sorts query parameters (canonicalize_url), so every page request is
    # dont_filter and no fingerprint is computed.
    # Fairness between origins: the scheduler hands out requests of the origin slot
    # with the fewest active downloads, so one slow origin never starves another.
    # JOBDIR holds the frontier's journal only (traverse_crawl/jobdir/pipeline.py): the
    # scheduler keeps its queue in memory, no requests.seen is written, and Scrapy's
    # pickled spider.state is not written (SpiderState is off below).
    "SCHEDULER": "traverse_crawl.crawl.scheduler.MemoryScheduler",
    "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    # Breadth first: requests have priority -depth (few distinct levels: Scrapy keeps
    # one queue per level) and leave each level in the order they were admitted.
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    # Scrapy starts CONCURRENT_ITEMS worker tasks per response to process its output
    # (the default 100 dominated the CPU profile). Each page yields one item, then its
    # new requests: two workers let the requests go on while the item's snapshot is
    # written.
    "CONCURRENT_ITEMS": 2,
    # Traverse sends no cookies: a project's COOKIES_ENABLED, meant for its own
    # spiders, does not reach the frontier (``-s`` on the command line still does).
    "COOKIES_ENABLED": False,
}

# Spider middlewares that would change the crawl: Traverse sends no Referer; the
# frontier owns depth (the spider sets Scrapy's ``depth`` key to the BFS depth, which
# DepthMiddleware would recompute from the callback's response); and a request dropped
# silently (URLLENGTH_LIMIT) would leave its page unrecorded. MetaCopyDetection warns
# about response.meta copied into new requests, which the spider never does (it builds
# each request's meta), and wrapped every output.
COMPONENTS_OFF: dict[str, tuple[str, ...]] = {
    "SPIDER_MIDDLEWARES": (
        "scrapy.spidermiddlewares.referer.RefererMiddleware",
        "scrapy.spidermiddlewares.depth.DepthMiddleware",
        "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware",
        "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware",
    ),
    "EXTENSIONS": ("scrapy.extensions.spiderstate.SpiderState",),
}


def apply(settings: BaseSettings) -> None:
    """Set the frontier's settings where the user set none (at spider priority, so the
    add-on's defaults, applied later, do not replace them)."""
    user = SETTINGS_PRIORITIES["project"]
    for name, value in SETTINGS.items():
        floor = SETTINGS_PRIORITIES["spider"] if name == "COOKIES_ENABLED" else user
        if (settings.getpriority(name) or 0) < floor:
            settings.set(name, value, priority="spider")
    # Each dictionary is written back at spider priority at least: ``scrapy crawl``
    # merges the project's settings into the crawler's again after this, and a
    # dictionary left at project priority would be replaced by the project's own.
    spider = SETTINGS_PRIORITIES["spider"]
    for name, paths in COMPONENTS_OFF.items():
        components = dict(settings.getdict(name))
        named = {load_object(key) for key in components}
        for path in paths:
            component = load_object(path)
            if component not in named:
                components[component] = None
        settings.set(name, components, priority=max(settings.getpriority(name) or 0, spider))
