"""``DirectStatsCollector`` keeps the stats as Scrapy's in-memory collector does."""

from __future__ import annotations

from typing import Any

from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from traverse_crawl.runtime.stats_collector import DirectStatsCollector


def exercise(collector_class: type[MemoryStatsCollector]) -> tuple[dict[str, Any], Any]:
    crawler = get_crawler()
    stats = collector_class(crawler)
    stats.open_spider()
    stats.inc_value("pages")
    stats.inc_value("pages", 3)
    stats.inc_value("bytes", 10, start=100)
    stats.set_value("reason", "finished")
    stats.max_value("max", 5)
    stats.max_value("max", 2)
    stats.min_value("min", 5)
    stats.min_value("min", 2)
    got = (stats.get_value("pages"), stats.get_value("absent", "default"))
    stats.set_stats({**stats.get_stats(), "replaced": True})
    return stats.get_stats(), got


def test_the_same_stats_as_scrapys_memory_collector() -> None:
    ours = exercise(DirectStatsCollector)
    assert ours == exercise(MemoryStatsCollector)
    assert ours[0]["pages"] == 4 and ours[0]["bytes"] == 110 and ours[1] == (4, "default")


def test_a_tuned_crawl_uses_it_unless_the_project_names_its_own() -> None:
    from scrapy.settings import Settings

    from traverse_crawl.addon import Addon

    tuned = {"TRAVERSE_PROCESS_TUNING": True}
    settings = Settings(tuned)
    Addon.update_pre_crawler_settings(settings)
    assert settings["STATS_CLASS"].endswith("DirectStatsCollector")
    own = Settings({**tuned, "STATS_CLASS": "scrapy.statscollectors.DummyStatsCollector"})
    Addon.update_pre_crawler_settings(own)
    assert own["STATS_CLASS"] == "scrapy.statscollectors.DummyStatsCollector"
    # A project that did not opt in keeps Scrapy's.
    untuned = Settings()
    Addon.update_pre_crawler_settings(untuned)
    assert untuned["STATS_CLASS"] == "scrapy.statscollectors.MemoryStatsCollector"
