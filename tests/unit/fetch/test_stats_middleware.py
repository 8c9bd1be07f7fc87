"""The downloader/* counts are Scrapy's own, figure for figure (``fetch/stats_middleware.py``)."""

from __future__ import annotations

from scrapy import Request
from scrapy.downloadermiddlewares.stats import DownloaderStats as ScrapyDownloaderStats
from scrapy.http import HtmlResponse, Response
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from traverse_crawl.fetch.stats_middleware import DownloaderStats

REQUESTS = [
    Request("http://127.0.0.1:8080/pages/p0001.html"),
    Request("http://127.0.0.1:8080"),  # no path: "/"
    Request("http://EXAMPLE.test:81/a;p=1/b;q=2?x=1&y=%20#frag"),
    Request("http://example.test/é?ü=1"),
    Request("http://user:pw@example.test/?"),
    Request(
        "http://example.test/form",
        method="POST",
        body=b"a=1&b=2",
        headers={"Accept": ["text/html", "*/*"], "X-Empty": [], "User-Agent": "bot/1"},
    ),
    Request("http://example.test/no-headers", headers={}),
]
RESPONSES = [
    HtmlResponse("http://example.test/", body=b"<html>\xc3\xa9</html>", encoding="utf-8"),
    Response(
        "http://example.test/",
        status=404,
        headers={"Content-Type": "text/plain", "Set-Cookie": ["a=1", "b=2"], "X": []},
        body=b"missing",
    ),
    Response("http://example.test/", status=599, body=b""),  # a status without a phrase
    Response("http://example.test/", status=304, headers={}),
]


def counts(middleware_class: type[ScrapyDownloaderStats]) -> dict[str, object]:
    crawler = get_crawler(settings_dict={"STATS_CLASS": MemoryStatsCollector})
    crawler.stats = MemoryStatsCollector(crawler)
    middleware = middleware_class.from_crawler(crawler)
    for request in REQUESTS:
        middleware.process_request(request)
        for response in RESPONSES:
            middleware.process_response(request, response)
    return crawler.stats.get_stats()


def test_every_count_is_the_one_scrapys_middleware_gives() -> None:
    ours = counts(DownloaderStats)
    assert ours == counts(ScrapyDownloaderStats)
    assert ours["downloader/request_count"] == len(REQUESTS)
    assert ours["downloader/request_method_count/POST"] == 1
    assert ours["downloader/response_status_count/404"] == len(REQUESTS)
