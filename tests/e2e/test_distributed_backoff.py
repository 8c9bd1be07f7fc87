"""The back-off across the workers of one distributed crawl: one value per origin in
the crawl's Redis ledger, whichever worker got the 429 and whichever sends next.

Two ``scrapy crawl`` workers share a real redis-server; the server's request log
(its own start and end times) shows the pace the site saw."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from tests.e2e.test_distributed_politeness import DELAY, finish, pages, workers
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.server import Handler, Reply, Server

pytestmark = pytest.mark.redis

SLACK = 0.1  # as the other distributed politeness tests: 90% of each wait
LATE = 1.0  # a loaded machine may start a request this much after its wait


def test_two_workers_keep_one_shared_back_off_per_origin(
    redis_server: RedisServer,  # noqa: F811
    server: Server,
    tmp_path: Path,
) -> None:
    links = "".join(f'<a href="/p{n}">{n}</a>' for n in range(1, 8))
    server.site({"/": f"<html><body>{links}</body></html>"})
    # The second, third and fourth page requests, whichever pages they are, get a 429.
    busy = {2, 3, 4}

    def page(handler: Handler) -> Reply:
        if len([p for p in server.started if p != "/robots.txt"]) in busy:
            return Reply(429, "busy", content_type="text/plain")
        return Reply(body=f"<p>page {handler.path}</p>")

    for n in range(1, 8):
        server.routes[f"/p{n}"] = page
    server.routes["/robots.txt"] = Reply(
        body="User-agent: *\nAllow: /\n", content_type="text/plain"
    )
    procs = workers(
        redis_server.url, [server], tmp_path,
        "-s", "RETRY_TIMES=0", "-s", "TRAVERSE_MAX_DELAY=2",
        # Two pages in hand per worker (twice CONCURRENT_REQUESTS): both get some.
        "-s", "CONCURRENT_REQUESTS=1", n=2,
    )  # fmt: skip
    finish(procs, tmp_path)
    hits = pages(server)
    assert {h.path for h in hits} == {"/", *(f"/p{n}" for n in range(1, 8))}
    # Whatever worker sent each request, the wait before it is the origin's one back-off
    # (doubled by each 429 up to the cap, halved by each success), or the delay.
    extra, checked = 0.0, []
    for n, (before, after) in enumerate(itertools.pairwise(hits), start=1):
        extra = min(2.0, max(1.0, 2 * extra)) if n in busy else extra / 2
        extra = extra if extra >= 1.0 else 0.0
        want = max(DELAY, extra)
        gap = after.start - before.end
        checked.append((after.path, round(gap, 2), want))
        assert want * (1 - SLACK) <= gap <= want + LATE, checked
    assert max(want for _, _, want in checked) == 2.0  # the back-off reached its cap
    assert checked[-1][2] == DELAY  # and came back down to the delay
    # Both workers sent requests to the origin: the pace above is one they shared.
    for i in range(2):
        log = (tmp_path / f"worker{i}.log").read_text(encoding="utf-8")
        assert int(re.findall(r"'ledger/acquired': (\d+)", log)[-1]) > 0, log[-2000:]


def test_two_workers_give_an_origin_up_after_its_block_pages_in_a_row(
    redis_server: RedisServer,  # noqa: F811
    server: Server,
    tmp_path: Path,
) -> None:
    blocked = [f"/b{n}" for n in range(1, 9)]
    links = "".join(f'<a href="{p}">{p}</a>' for p in blocked)
    # The seed answers late, so both workers have joined the crawl before its links are
    # queued (a worker started last on a loaded machine could otherwise find the origin
    # given up already).
    server.site({"/": Reply(body=f"<html><body>{links}</body></html>", delay=3.0)})
    server.site({p: f"<p>MARK-CHALLENGE {p}</p>" for p in blocked})
    server.routes["/robots.txt"] = Reply(
        body="User-agent: *\nAllow: /\n", content_type="text/plain"
    )
    procs = workers(
        redis_server.url, [server], tmp_path,
        "-s", "RETRY_TIMES=0", "-s", "TRAVERSE_MAX_DELAY=1",
        "-s", 'TRAVERSE_BLOCK_PATTERNS=["MARK-CHALLENGE"]', "-s", "TRAVERSE_BLOCK_STOP_AFTER=3",
        "-s", "CONCURRENT_REQUESTS=1", n=2,
    )  # fmt: skip
    finish(procs, tmp_path)
    # Three block pages in a row, whichever workers got them, then no request at all.
    sent = [h.path for h in pages(server)]
    assert sent[0] == "/" and len(sent) == 4, sent
    # Both workers sent some of them: the run they counted was the crawl's.
    for i in range(2):
        log = (tmp_path / f"worker{i}.log").read_text(encoding="utf-8")
        assert int(re.findall(r"'ledger/acquired': (\d+)", log)[-1]) > 0, log[-2000:]
    manifest = json.loads(next((tmp_path / "manifests").glob("*.json")).read_text())
    errors = [p["fetch"]["error"] for p in manifest["pages"][1:]]
    assert [e["kind"] for e in errors] == ["blocked"] * 8
    assert sum("not requested" in e["message"] for e in errors) == 5
    # Said once in the seed's manifest, whichever workers had its pages there.
    said = [w for w in manifest["warnings"] if "gave up after 3 blocked pages" in w]
    assert len(said) == 1, said
