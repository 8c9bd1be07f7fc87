"""A ``scrapy crawl`` builds no debug record its handlers would drop, and its log still shows
what ``LOG_LEVEL`` says: the root logger's level during and after the crawl, seen by
``tests/support/heapprobe.py``."""

from __future__ import annotations

import logging

from tests.support.heapprobe import probed_crawl
from tests.support.server import Server

SITE = {"/index.html": '<a href="/a.html">a</a>', "/a.html": "<p>a</p>"}


def _crawl(server: Server, tmp_path, level: str):
    server.site(SITE)
    run, seen = probed_crawl(server, tmp_path, "-s", f"LOG_LEVEL={level}")
    return run, {"during": seen["root_level"], "after": seen["root_level_after"]}


def test_at_log_level_info_debug_calls_stop_at_the_logger(server: Server, tmp_path):
    run, seen = _crawl(server, tmp_path, "INFO")
    assert seen == {"during": logging.INFO, "after": logging.NOTSET}
    # What the log shows is what LOG_LEVEL=INFO always showed.
    assert "Spider opened" in run.stderr and "Dumping Scrapy stats" in run.stderr
    assert "DEBUG:" not in run.stderr and "Crawled (200)" not in run.stderr
    assert "'log_count/INFO'" in run.stderr


def test_at_log_level_debug_every_debug_line_is_still_written(server: Server, tmp_path):
    run, seen = _crawl(server, tmp_path, "DEBUG")
    assert seen == {"during": logging.DEBUG, "after": logging.NOTSET}
    assert f"Crawled (404) <GET {server.url('/robots.txt')}>" in run.stderr
    for path in ("/index.html", "/a.html"):
        assert f"Crawled (200) <GET {server.url(path)}>" in run.stderr, path
    assert run.stderr.count("DEBUG: Scraped from <200") == 2
