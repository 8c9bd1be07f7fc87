"""``traverse_origin_delay_seconds``: the slowest origins only, so its labels stay bounded."""

from __future__ import annotations

from tests.support.components import make_crawler
from traverse_crawl.operations.metrics import SLOWEST_ORIGINS, origin_delays
from traverse_crawl.politeness.blocking import pushback


def test_only_the_slowest_origins_that_push_back_are_shown():
    crawler = make_crawler({"TRAVERSE_MAX_DELAY": 600})
    state = pushback(crawler)
    for n in range(SLOWEST_ORIGINS + 5):
        pace = state.pace(f"https://o{n:02d}.test")
        for _ in range(n % 7):
            pace.push_back()
    state.pace("https://calm.test")  # never pushed back
    shown = [(s.labels["origin"], s.value) for s in origin_delays(crawler).samples]
    assert len(shown) == SLOWEST_ORIGINS
    assert [v for _, v in shown] == sorted((v for _, v in shown), reverse=True)
    assert shown[0][1] == 32.0  # six raises: 1, 2, 4, 8, 16, 32 s
    assert "https://calm.test" not in dict(shown) and "https://o00.test" not in dict(shown)
