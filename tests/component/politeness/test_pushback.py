"""Back-off and pace against real loopback servers: 429 and 503, with and without
``Retry-After``, slow responses. Every timing is read from the server's own request
log (the idle time between the end of one request and the start of the next), with
tolerances that hold on a busy two-core machine: a wait is never shorter than it
should be (less a scheduling slack), and not much longer."""

from __future__ import annotations

import itertools

import pytest_twisted

from tests.support.server import Hit, Reply, Server

SLACK = 0.05  # a wait measured at the server may start this much early (clock reads)
LATE = 0.9  # ... and end this much late on a loaded machine


def page_hits(server: Server) -> list[Hit]:
    return sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)


def gaps(hits: list[Hit]) -> list[float]:
    return [b.start - a.end for a, b in itertools.pairwise(hits)]


def links(*paths: str) -> str:
    return "".join(f'<a href="{p}">{p}</a>' for p in paths)


def assert_waits(hits: list[Hit], expected: list[float]) -> None:
    measured = gaps(hits)
    assert len(measured) == len(expected), [h.path for h in hits]
    for path, gap, want in zip([h.path for h in hits[1:]], measured, expected, strict=True):
        assert want - SLACK <= gap <= want + LATE, (path, gap, want, measured)


@pytest_twisted.ensureDeferred
async def test_each_429_doubles_the_origins_wait_up_to_the_cap_and_successes_halve_it(
    server, crawl
):
    paths = [f"/p{i}" for i in range(1, 7)]
    server.site(
        {
            "/": links(*paths),
            **{p: Reply(429) for p in paths[:3]},
            **{p: "ok" for p in paths[3:]},
        }
    )
    result = await crawl(
        settings={"TRAVERSE_MIN_DELAY": 0.05, "TRAVERSE_MAX_DELAY": 2, "RETRY_TIMES": 0},
        url=server.url("/"),
    )
    hits = page_hits(server)
    assert [h.path for h in hits] == ["/", *paths]
    # 429: 1 s, 429: 2 s, 429: 2 s (the cap), 200: halved to 1 s, 200: 0.5 s is dropped.
    assert_waits(hits, [0.05, 1.0, 2.0, 2.0, 1.0, 0.05])
    assert result.stats["politeness/backoffs"] == 3
    kinds = [p["fetch"].get("error", {}).get("kind") for p in result.manifest["pages"]]
    assert kinds == [None, "http-error", "http-error", "http-error", None, None, None]


@pytest_twisted.ensureDeferred
async def test_a_retry_after_within_the_cap_sets_the_wait_and_one_above_it_doubles(server, crawl):
    server.site(
        {
            "/": links("/a", "/b", "/c", "/d"),
            "/a": Reply(429, headers={"Retry-After": "2"}),
            "/b": Reply(503, headers={"Retry-After": "100"}),  # above the cap
            "/c": "ok",
            "/d": "ok",
        }
    )
    await crawl(
        settings={"TRAVERSE_MIN_DELAY": 0.05, "TRAVERSE_MAX_DELAY": 3, "RETRY_TIMES": 0},
        url=server.url("/"),
    )
    hits = page_hits(server)
    assert [h.path for h in hits] == ["/", "/a", "/b", "/c", "/d"]
    # Retry-After 2 sets 2 s; 100 is above the cap: doubled to 3 s (the cap); halved: 1.5 s.
    assert_waits(hits, [0.05, 2.0, 3.0, 1.5])


@pytest_twisted.ensureDeferred
async def test_a_pages_own_retry_waits_the_origins_back_off_when_longer(server, crawl):
    answers = iter([Reply(503), Reply(503)])
    server.routes["/flaky"] = lambda _h: next(answers, Reply(body="ok"))
    result = await crawl(settings={"RETRY_TIMES": 2}, url=server.url("/flaky"))
    page = result.manifest["pages"][0]
    assert page["fetch"]["snapshot"]["status"] == 200
    # The retry backoff is 0.01 s (the tests' TRAVERSE_RETRY_BACKOFF): the back-off wins.
    assert_waits(page_hits(server), [1.0, 2.0])


@pytest_twisted.ensureDeferred
async def test_other_origins_are_not_slowed_down(server, server2, tmp_path, crawl):
    server.site({"/": links("/a", "/b", "/c"), **{p: Reply(429) for p in ("/a", "/b", "/c")}})
    server2.site({"/": links("/a", "/b", "/c", "/d"), **{p: "ok" for p in "abcd"}})
    server2.site({f"/{p}": "ok" for p in "abcd"})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"slow\t{server.url('/')}\nfast\t{server2.url('/')}\n")
    await crawl(
        settings={"TRAVERSE_MIN_DELAY": 0.05, "TRAVERSE_MAX_DELAY": 4, "RETRY_TIMES": 0},
        seeds=str(seeds),
    )
    assert_waits(page_hits(server), [0.05, 1.0, 2.0])
    fast = page_hits(server2)
    assert len(fast) == 5 and max(gaps(fast)) < 0.05 + LATE
    # The fast origin was done while the slow one still waited out its back-off.
    assert fast[-1].end < page_hits(server)[-1].start


@pytest_twisted.ensureDeferred
async def test_the_delay_factor_paces_an_origin_by_its_download_time(server, crawl):
    server.site({"/": links("/a", "/b"), "/a": Reply(body="slow", delay=0.3), "/b": "ok"})
    result = await crawl(
        settings={"TRAVERSE_DELAY_FACTOR": 2, "TRAVERSE_MAX_DELAY": 5}, url=server.url("/")
    )
    hits = page_hits(server)
    assert [h.path for h in hits] == ["/", "/a", "/b"]
    took = hits[1].end - hits[1].start
    assert 2 * took - SLACK <= gaps(hits)[1] <= 2 * took + LATE
    assert len(result.manifest["pages"]) == 3
    assert "politeness/backoffs" not in result.stats


@pytest_twisted.ensureDeferred
async def test_the_cap_bounds_the_factor(server, crawl):
    server.site({"/": links("/a", "/b"), "/a": Reply(body="slow", delay=0.4), "/b": "ok"})
    await crawl(
        settings={"TRAVERSE_DELAY_FACTOR": 10, "TRAVERSE_MAX_DELAY": 0.5}, url=server.url("/")
    )
    assert_waits(page_hits(server)[1:], [0.5])
