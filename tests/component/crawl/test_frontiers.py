"""The seeds' requests and recorded outcomes (``crawl/frontiers.py``), from a real Crawler:
at most a window of requests out per seed, items in the order outcomes arrive, each seed's
end announced once, and a Redis worker's view that records nothing itself."""

from __future__ import annotations

from typing import Any

from scrapy import Spider
from scrapy.utils.test import get_crawler

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontier import Outcome
from traverse_crawl.crawl.frontiers import REQUEST_WINDOW, Frontiers
from traverse_crawl.crawl.items import PageItem
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.crawl.spool import Spool
from traverse_crawl.meta_keys import HINT, INDEX, SEED
from traverse_crawl.signals import seed_finished

ORIGIN = "http://a.test"
LINKS = [f"{ORIGIN}/p{i}" for i in range(REQUEST_WINDOW + 44)]


def callback(response: Any) -> None:
    """The spider's callback, named by every request."""


def errback(failure: Any) -> None:
    """The spider's errback, named by every request."""


def frontiers_for(tmp_path, *, distributed: bool = False, **settings: Any) -> Frontiers:
    crawler = get_crawler(
        settings_dict={"TRAVERSE_MAX_PAGES": len(LINKS) + 1, "TRAVERSE_MAX_DEPTH": 1, **settings}
    )
    seeds = [Seed("s", ORIGIN + "/", content_type="html")]
    config = get_config(crawler)
    return Frontiers(
        crawler, config, seeds, Spool(str(tmp_path / "spool")), callback, errback,
        journal=False, distributed=distributed,
    )  # fmt: skip


def seed_page() -> Outcome:
    return Outcome({"snapshot": {"url": ORIGIN + "/"}}, links=list(LINKS))


def test_at_most_a_window_of_requests_is_out_per_seed(tmp_path) -> None:
    frontiers = frontiers_for(tmp_path)
    frontiers.open(0).admit()
    [first] = frontiers.next_requests(0)
    assert (first.url, first.meta[SEED], first.meta[INDEX], first.meta[HINT]) == (
        ORIGIN + "/", 0, 0, "html",
    )  # fmt: skip
    assert (first.callback, first.errback, first.dont_filter) == (callback, errback, True)
    item, *requests = frontiers.finish_page(0, 0, seed_page())
    assert isinstance(item, PageItem) and item["url"] == ORIGIN + "/" and item.outcome is None
    assert [r.url for r in requests] == LINKS[:REQUEST_WINDOW]
    assert all(HINT not in r.meta and r.priority == -1 for r in requests)
    # One outcome back, one more request out: the next admitted page, in BFS order.
    _, *more = frontiers.finish_page(0, 5, Outcome({"snapshot": {}}))
    assert [r.url for r in more] == [LINKS[REQUEST_WINDOW]]
    assert frontiers.next_requests(0) == []


def test_the_end_of_a_seed_is_announced_once(tmp_path) -> None:
    frontiers = frontiers_for(tmp_path, TRAVERSE_MAX_PAGES=3)
    ended: list[str] = []

    def on_end(frontier: Any, seed_key: int) -> None:  # held here: signals hold weak refs
        ended.append(frontier.seed_id)

    frontiers.crawler.signals.connect(on_end, signal=seed_finished)
    frontiers.open(0).admit()
    frontiers.next_requests(0)
    requests = list(frontiers.finish_page(0, 0, seed_page()))[1:]
    assert len(requests) == 2  # the cap: 3 pages
    for request in requests:
        list(frontiers.finish_page(0, request.meta[INDEX], Outcome({"snapshot": {}})))
    frontiers.check_finished(0)  # again: announced once
    assert ended == ["s"]
    stats = frontiers.crawler.stats
    assert stats is not None and stats.get_value("frontier/truncated") == 1


def test_a_workers_view_records_nothing_itself(tmp_path) -> None:
    frontiers = frontiers_for(tmp_path, distributed=True)
    frontier = frontiers.frontier(0)  # joined: made on the first call, no spool
    assert frontiers.frontier(0) is frontier and frontier.window is None  # no spool
    frontier.admit()
    item, *requests = frontiers.finish_page(0, 0, seed_page())
    assert requests == [] and item.outcome is not None  # Redis records it, not this process
    assert len(frontier.pages) == 0


def test_only_the_traverse_spiders_frontiers_count(tmp_path) -> None:
    frontiers = frontiers_for(tmp_path)
    spider = Spider(name="mine")
    assert Frontiers.of(spider) is None
    spider.frontiers = {}  # type: ignore[attr-defined]  # a user's own attribute
    assert Frontiers.of(spider) is None
    spider.frontiers = frontiers  # type: ignore[attr-defined]
    assert Frontiers.of(spider) is frontiers
