"""Component tests: the politeness slot's delay and the middleware that sets it up.

``DelaySlot.download_delay()`` is what Scrapy's downloader waits, counted from
the slot's ``lastseen`` (the last dispatch): a table of slot states and the wait.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from tests.support.components import ORIGIN, make_crawler, page_request
from traverse_crawl.politeness import delay_middleware as politeness_module
from traverse_crawl.politeness import delay_slot
from traverse_crawl.politeness.delay_middleware import PolitenessMiddleware
from traverse_crawl.politeness.delay_slot import DelaySlot

EPS = delay_slot._EPSILON


def slot(delay: float, lastseen: float, last_end: float, head: float | None) -> DelaySlot:
    """A slot that dispatched at ``lastseen``, saw its last download end at
    ``last_end``, and has a request at the head of its queue (a retry when
    ``head`` is its ``traverse_not_before``)."""
    s = DelaySlot(1 if delay else 8, delay)
    s.lastseen = lastseen
    s.last_end = last_end
    meta: dict[str, Any] = {} if head is None else {"traverse_not_before": head}
    s.queue.append((Request(ORIGIN + "/next", meta=meta), None))
    return s


@pytest.mark.parametrize(
    ("delay", "lastseen", "last_end", "head", "wait"),
    [
        # No minimum delay: nothing to wait, except a retry's backoff.
        (0.0, 100.0, 0.0, None, 0.0),
        (0.0, 100.0, 0.0, 100.25, 0.25),
        (0.0, 100.0, 0.0, 99.0, EPS),  # a backoff already over
        # A request is in flight (dispatched after the last end): wait a whole delay,
        # the downloader asks again when it ends.
        (1.0, 100.0, 99.0, None, 1.0),
        (1.0, 100.0, 99.0, 100.1, 1.0),
        # The last download ended at 100.4: the next starts 1.0 after that end.
        (1.0, 100.0, 100.4, None, 1.4),
        (1.0, 100.0, 100.0, None, 1.0),
        # A retry at the head waits its backoff instead of the delay.
        (1.0, 100.0, 100.4, 100.5, 0.5),
        (1.0, 100.0, 100.4, 90.0, EPS),
    ],
)
def test_slot_delay(delay, lastseen, last_end, head, wait):
    assert slot(delay, lastseen, last_end, head).download_delay() == pytest.approx(wait)


def test_a_retry_goes_to_the_head_of_its_origins_queue():
    s = DelaySlot(1, 1.0)
    first, retry, last = (Request(f"{ORIGIN}/{n}") for n in ("first", "retry", "last"))
    retry.meta["traverse_not_before"] = 5.0
    for request in (first, retry, last):
        s.queue.append((request, None))
    assert [r for r, _ in s.queue] == [retry, first, last]


def test_end_of_a_download_is_stamped(monkeypatch):
    s = DelaySlot(1, 1.0)
    request = Request(ORIGIN + "/")
    s.transferring.add(request)
    monkeypatch.setattr(delay_slot, "monotonic", lambda: 42.0)
    s.transferring.remove(request)
    assert s.last_end == 42.0


@pytest.mark.parametrize(
    ("min_delay", "origin_delay", "expected"),
    [(1.0, None, 1.0), (1.0, 3.0, 3.0), (0.0, None, 0.0), (0.5, 0.2, 0.5)],
)
def test_the_origin_delay_is_the_minimum_or_a_longer_crawl_delay(min_delay, origin_delay, expected):
    mw = PolitenessMiddleware.from_crawler(make_crawler({"TRAVERSE_MIN_DELAY": min_delay}))
    meta = {} if origin_delay is None else {"traverse_origin_delay": origin_delay}
    assert mw._delay(meta) == expected


def politeness(settings=None):
    crawler = make_crawler(settings)
    crawler.engine = crawler._create_engine()  # set when a crawl starts
    return PolitenessMiddleware.from_crawler(crawler), crawler.engine.downloader.slots


def test_a_backoff_becomes_the_attempts_start_time(monkeypatch):
    mw, _ = politeness()
    monkeypatch.setattr(politeness_module, "monotonic", lambda: 100.0)
    request = page_request(traverse_backoff=0.25)
    del request.meta["download_slot"]
    mw.process_request(request)
    assert request.meta["traverse_not_before"] == 100.25
    assert "traverse_backoff" not in request.meta
    assert request.meta["download_slot"] == ORIGIN


@pytest.mark.parametrize(
    ("min_delay", "per_domain", "concurrency", "delay"),
    [(1.0, 8, 1, 1.0), (0.0, 8, 8, 0.0), (0.0, 3, 3, 0.0)],
)
def test_each_origin_gets_a_polite_slot(min_delay, per_domain, concurrency, delay):
    settings = {"TRAVERSE_MIN_DELAY": min_delay, "CONCURRENT_REQUESTS_PER_DOMAIN": per_domain}
    mw, slots = politeness(settings)
    mw.process_request(page_request())
    slot = slots[ORIGIN]
    assert isinstance(slot, DelaySlot)
    assert (slot.concurrency, slot.delay) == (concurrency, delay)


def test_a_crawl_delay_raises_the_origins_delay_and_robots_requests_never_wait():
    mw, slots = politeness({"TRAVERSE_MIN_DELAY": 0})
    mw.process_request(page_request())
    mw.process_request(page_request("/2", traverse_origin_delay=2.5))
    assert (slots[ORIGIN].concurrency, slots[ORIGIN].delay) == (1, 2.5)
    robots = Request(ORIGIN + "/robots.txt", meta={"traverse_robots": True})
    robots.meta["download_slot"] = "robots " + ORIGIN
    mw.process_request(robots)
    assert slots["robots " + ORIGIN].delay == 0.0
