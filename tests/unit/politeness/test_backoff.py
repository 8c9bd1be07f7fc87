"""The back-off and pace rules, pure: raised, halved, the effective delay."""

from __future__ import annotations

import pytest

from traverse_crawl.politeness.backoff import OriginPace, effective, halved, raised


@pytest.mark.parametrize(
    ("extra", "cap", "retry_after", "expected"),
    [
        (0.0, 60.0, None, 1.0),  # at least 1 s
        (0.3, 60.0, None, 1.0),
        (1.0, 60.0, None, 2.0),  # doubled
        (40.0, 60.0, None, 60.0),  # up to the cap
        (0.0, 60.0, 7.0, 7.0),  # a Retry-After within the cap sets it
        (16.0, 60.0, 3.0, 3.0),  # ... even lower than the back-off
        (4.0, 60.0, 120.0, 8.0),  # above the cap: doubled instead
        (4.0, 0.0, None, 0.0),  # a cap of 0: no back-off
    ],
)
def test_raised(extra, cap, retry_after, expected):
    assert raised(extra, cap, retry_after) == expected


@pytest.mark.parametrize(("extra", "expected"), [(8.0, 4.0), (2.0, 1.0), (1.5, 0.0), (0.0, 0.0)])
def test_halved_and_dropped_under_a_second(extra, expected):
    assert halved(extra) == expected


@pytest.mark.parametrize(
    ("base", "pace", "extra", "cap", "expected"),
    [
        (1.0, 0.0, 0.0, 60.0, 1.0),  # TRAVERSE_MIN_DELAY alone
        (1.0, 3.0, 0.0, 60.0, 3.0),  # the factor's pace
        (1.0, 3.0, 8.0, 60.0, 8.0),  # the back-off
        (1.0, 90.0, 0.0, 60.0, 60.0),  # never above the cap...
        (120.0, 0.0, 8.0, 60.0, 120.0),  # ...unless a Crawl-delay is (today's rule)
    ],
)
def test_effective_delay(base, pace, extra, cap, expected):
    assert effective(base, pace, extra, cap) == expected


def test_an_origin_pace_slows_and_recovers():
    pace = OriginPace(cap=5.0, factor=0.0)
    assert not pace.slowed
    assert [pace.push_back() for _ in range(4)] == [1.0, 2.0, 4.0, 5.0]
    assert pace.slowed and pace.delay(0.5) == 5.0
    for expected in (2.5, 1.25, 0.0):
        pace.answered(0.2)
        assert pace.extra == expected
    assert not pace.slowed and pace.pace == 0.0  # no factor: no pace


def test_a_factor_paces_by_the_last_download_time():
    pace = OriginPace(cap=5.0, factor=2.0)
    assert pace.slowed  # one request at a time from the start
    pace.answered(0.3)
    assert pace.delay(0.0) == pytest.approx(0.6)
    pace.paced(4.0)
    assert pace.delay(0.0) == 5.0
