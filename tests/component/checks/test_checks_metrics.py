"""The metrics endpoint's gauge of failing checks: 1 per failing check, by seed and check."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector
from scrapy.utils.test import get_crawler

from traverse_crawl.checks.extension import ChecksExtension, results
from traverse_crawl.operations.metrics import checks_gauge


def test_each_failing_check_is_a_gauge_of_one(tmp_path):
    (tmp_path / "checks.toml").write_text("[crawl]\nmin_pages = 3\n", encoding="utf-8")
    crawler = get_crawler(settings_dict={"TRAVERSE_CHECKS": str(tmp_path / "checks.toml")})
    ChecksExtension(crawler)
    results(crawler)["shop"] = {
        "results": [
            {"check": "crawl.min_pages", "passed": False},
            {"check": "crawl.max_share.timeout", "passed": True},
        ]
    }
    results(crawler)["blog"] = {"results": [{"check": "crawl.min_pages", "passed": True}]}

    class Gauge(Collector):
        def collect(self):
            yield checks_gauge(crawler)

    registry = CollectorRegistry()
    registry.register(Gauge())
    text = generate_latest(registry).decode()
    lines = [line for line in text.splitlines() if line.startswith("traverse_checks_failed")]
    assert lines == ['traverse_checks_failed{check="crawl.min_pages",seed="shop"} 1.0']
