"""Scrapy's scheduler, without its own ``JOBDIR`` queue.

With ``JOBDIR``, Scrapy's scheduler pickles pending requests to disk queues and writes
their index only at a clean close: after a SIGKILL the queue is lost, and on a resume
it would send its requests next to the ones the frontier re-admits, so pages would be
fetched twice. The frontier's journal (``jobdir/pipeline.py``) is the crawl's only
persistent state (docs/architecture.md, "State and durability").
"""

from __future__ import annotations

from typing import Any

from scrapy.core.scheduler import Scheduler
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler, load_object


class MemoryScheduler(Scheduler):
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        settings = crawler.settings
        dupefilter_cls = load_object(settings["DUPEFILTER_CLASS"])
        return cls(
            dupefilter=build_from_crawler(dupefilter_cls, crawler),
            jobdir=None,
            dqclass=load_object(settings["SCHEDULER_DISK_QUEUE"]),
            mqclass=load_object(settings["SCHEDULER_MEMORY_QUEUE"]),
            logunser=settings.getbool("SCHEDULER_DEBUG"),
            stats=crawler.stats,
            pqclass=load_object(settings["SCHEDULER_PRIORITY_QUEUE"]),
            crawler=crawler,
        )
