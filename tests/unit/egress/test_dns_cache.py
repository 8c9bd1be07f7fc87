"""The egress guard's answer lifetimes and its bounded answer table (egress/dns_cache.py)."""

from __future__ import annotations

import pytest

from traverse_crawl.egress.dns_cache import DEFAULT_TTL, MAX_TTL, Answer, AnswerCache, lifetime


@pytest.mark.parametrize(
    ("ttl", "cap", "expected"),
    [
        (120, MAX_TTL, 120),  # the record's own TTL
        (86400, MAX_TTL, MAX_TTL),  # capped at 300 s
        (0, MAX_TTL, 1),  # a floor of 1 s: TTL 0 is not a query per request
        (0.2, MAX_TTL, 1),
        (None, MAX_TTL, DEFAULT_TTL),  # no TTL known (getaddrinfo): 60 s
        (None, 20, 20),  # ... but never past the cap
        (120, 0, 0),  # TRAVERSE_DNS_TTL_MAX=0: nothing is kept
        (None, 0, 0),
    ],
)
def test_lifetime(ttl, cap, expected):
    assert lifetime(ttl, cap) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_answer_lives_until_its_lifetime_ends():
    clock = Clock()
    cache = AnswerCache(MAX_TTL, clock)
    cache.put("a.example", Answer(("192.0.2.1",), ttl=10))
    clock.now += 9.99
    assert cache.get("a.example") == ("192.0.2.1",)
    clock.now += 0.01
    assert cache.get("a.example") is None
    assert len(cache) == 0  # an expired entry is dropped when seen


def test_empty_answers_and_a_zero_cap_keep_nothing():
    clock = Clock()
    cache = AnswerCache(MAX_TTL, clock)
    cache.put("none.example", Answer(()))
    assert cache.get("none.example") is None
    off = AnswerCache(0, clock)
    off.put("a.example", Answer(("192.0.2.1",), ttl=60))
    assert off.get("a.example") is None


def test_memory_is_bounded_and_the_least_recently_used_host_goes_first():
    clock = Clock()
    cache = AnswerCache(MAX_TTL, clock, limit=3)
    for i in range(3):
        cache.put(f"h{i}.example", Answer((f"192.0.2.{i}",), ttl=60))
    assert cache.get("h0.example") == ("192.0.2.0",)  # h0 is now the most recent
    cache.put("h3.example", Answer(("192.0.2.3",), ttl=60))
    assert len(cache) == 3
    assert cache.get("h1.example") is None  # the least recently used went out
    assert cache.get("h0.example") == ("192.0.2.0",)
    for i in range(10_000):
        cache.put(f"many{i}.example", Answer(("192.0.2.9",), ttl=60))
    assert len(cache) == 3
