"""Polite, safe fetching against real loopback servers: delay, retries, redirects, snapshots."""

from __future__ import annotations

import hashlib
import itertools

import pytest_twisted

from tests.support.server import Reply


def gaps(hits: list) -> list[float]:
    """Idle time at the server between the end of one request and the start of the next."""
    ordered = sorted(hits, key=lambda h: h.start)
    return [b.start - a.end for a, b in itertools.pairwise(ordered)]


@pytest_twisted.ensureDeferred
async def test_min_delay_per_origin_while_two_origins_crawl_at_once(
    server, server2, tmp_path, crawl
):
    for srv in (server, server2):
        srv.site(
            {
                "/": "".join(f'<a href="/p{i}">p</a>' for i in range(5)),
                **{f"/p{i}": "page" for i in range(5)},
                "/robots.txt": Reply(body="", content_type="text/plain"),
            }
        )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"a\t{server.url('/')}\nb\t{server2.url('/')}\n")
    result = await crawl(
        settings={"TRAVERSE_MIN_DELAY": 0.2, "CONCURRENT_REQUESTS": 16}, seeds=str(seeds)
    )
    assert all(len(m["pages"]) == 6 for m in result.manifests())
    for srv in (server, server2):
        pages = [h for h in srv.hits if h.path != "/robots.txt"]
        assert len(pages) == 6
        assert min(gaps(pages)) >= 0.19
    # Origins never wait for each other: their requests interleave in time.
    a = sorted(h.start for h in server.hits if h.path != "/robots.txt")
    b = sorted(h.start for h in server2.hits if h.path != "/robots.txt")
    assert a[0] < b[-1] and b[0] < a[-1]


@pytest_twisted.ensureDeferred
async def test_min_delay_applies_between_redirect_hops(server, crawl):
    server.site(
        {
            "/a": Reply(302, headers={"Location": "/b"}),
            "/b": Reply(302, headers={"Location": "/c"}),
            "/c": "done",
        }
    )
    result = await crawl(settings={"TRAVERSE_MIN_DELAY": 0.25}, url=server.url("/a"))
    snapshot = result.manifest["pages"][0]["fetch"]["snapshot"]
    assert snapshot["redirects"] == [server.url("/a"), server.url("/b")]
    assert snapshot["url"] == server.url("/c")
    assert min(gaps([h for h in server.hits if h.path != "/robots.txt"])) >= 0.24


def sequence(*replies: Reply):
    """A route that answers with each reply in turn (the last one repeats)."""
    state = {"n": 0}

    def route(_handler: object) -> Reply:
        reply = replies[min(state["n"], len(replies) - 1)]
        state["n"] += 1
        return reply

    return route


@pytest_twisted.ensureDeferred
async def test_503_503_200_gives_a_snapshot_with_two_retry_warnings(server, crawl):
    url = server.url("/flaky")
    server.routes["/flaky"] = sequence(Reply(503), Reply(503), Reply(200, body="ok"))
    result = await crawl(url=url)
    page = result.manifest["pages"][0]
    assert page["fetch"]["snapshot"]["status"] == 200
    assert page["fetch"]["warnings"] == [
        f"retry 1/2 for {url} after HTTP 503",
        f"retry 2/2 for {url} after HTTP 503",
    ]
    assert result.manifest["warnings"] == [
        f"[depth 0] {url}: {w}" for w in page["fetch"]["warnings"]
    ]
    assert server.count("/flaky") == 3
    assert result.stats["retry/count"] == 2


@pytest_twisted.ensureDeferred
async def test_retries_run_out_into_http_error(server, crawl):
    url = server.url("/down")
    server.routes["/down"] = Reply(500)
    result = await crawl(settings={"RETRY_TIMES": 1}, url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"] == {
        "kind": "http-error",
        "message": f"HTTP 500 from {url}",
        "status": 500,
    }
    assert fetch["warnings"] == [f"retry 1/1 for {url} after HTTP 500"]
    assert server.count("/down") == 2


@pytest_twisted.ensureDeferred
async def test_retry_times_is_clamped_to_five(server, crawl):
    server.routes["/down"] = Reply(502)
    result = await crawl(settings={"RETRY_TIMES": 9}, url=server.url("/down"))
    assert server.count("/down") == 6
    assert result.manifest["pages"][0]["fetch"]["warnings"][-1].startswith("retry 5/5 ")


@pytest_twisted.ensureDeferred
async def test_404_and_408_are_not_retried(server, crawl):
    server.site(
        {
            "/": '<a href="/gone">g</a><a href="/slow">s</a>',
            "/gone": Reply(404),
            "/slow": Reply(408),
        }
    )
    result = await crawl(url=server.url("/"))
    pages = result.manifest["pages"]
    assert pages[1]["fetch"] == {
        "error": {
            "kind": "http-error",
            "message": f"HTTP 404 from {server.url('/gone')}",
            "status": 404,
        }
    }
    assert pages[2]["fetch"]["error"]["status"] == 408
    assert server.count("/gone") == 1 and server.count("/slow") == 1


@pytest_twisted.ensureDeferred
async def test_429_retry_after_is_honoured(server, crawl):
    server.routes["/busy"] = sequence(Reply(429, headers={"Retry-After": "1"}), Reply(body="ok"))
    result = await crawl(url=server.url("/busy"))
    assert "snapshot" in result.manifest["pages"][0]["fetch"]
    first, second = sorted((h for h in server.hits if h.path == "/busy"), key=lambda h: h.start)
    assert second.start - first.end >= 0.95


@pytest_twisted.ensureDeferred
async def test_retry_after_over_the_cap_falls_back_to_backoff(server, crawl):
    server.routes["/busy"] = sequence(Reply(503, headers={"Retry-After": "120"}), Reply(body="ok"))
    result = await crawl(settings={"TRAVERSE_RETRY_AFTER_MAX": 2}, url=server.url("/busy"))
    assert "snapshot" in result.manifest["pages"][0]["fetch"]
    assert server.count("/busy") == 2
    # The wait itself (the backoff, not Retry-After's 120 s) is a deterministic check:
    # tests/component/politeness/test_redirect_and_retry.py::test_retry_after_or_the_backoff.


def chain(server, hops: int) -> None:
    for i in range(hops):
        server.routes[f"/r{i}"] = Reply(301, headers={"Location": f"/r{i + 1}"})
    server.routes[f"/r{hops}"] = Reply(body="end")


@pytest_twisted.ensureDeferred
async def test_five_redirects_succeed(server, crawl):
    chain(server, 5)
    result = await crawl(url=server.url("/r0"))
    snapshot = result.manifest["pages"][0]["fetch"]["snapshot"]
    assert snapshot["url"] == server.url("/r5")
    assert snapshot["redirects"] == [server.url(f"/r{i}") for i in range(5)]


@pytest_twisted.ensureDeferred
async def test_sixth_redirect_is_too_many(server, crawl):
    chain(server, 6)
    result = await crawl(url=server.url("/r0"))
    assert result.manifest["pages"][0]["fetch"] == {
        "error": {
            "kind": "too-many-redirects",
            "message": f"exceeded 5 redirects starting at {server.url('/r0')}",
        }
    }
    assert server.count("/r6") == 0
    assert server.count("/r5") == 1


@pytest_twisted.ensureDeferred
async def test_redirect_without_location_or_to_a_bad_scheme(server, crawl):
    server.site(
        {
            "/": '<a href="/noloc">n</a><a href="/ftp">f</a>',
            "/noloc": Reply(302),
            "/ftp": Reply(302, headers={"Location": "ftp://files.example.test/x"}),
        }
    )
    result = await crawl(url=server.url("/"))
    pages = result.manifest["pages"]
    assert pages[1]["fetch"]["error"] == {
        "kind": "http-error",
        "message": f"redirect 302 with no Location header from {server.url('/noloc')}",
        "status": 302,
    }
    assert pages[2]["fetch"]["error"] == {
        "kind": "invalid-url",
        "message": 'redirect to invalid URL "ftp://files.example.test/x" from '
        + server.url("/ftp"),
    }
    assert server.count("/ftp") == 1  # invalid-url is not retried


@pytest_twisted.ensureDeferred
async def test_slow_headers_time_out(server, crawl):
    url = server.url("/slow")
    server.routes["/slow"] = Reply(body="late", delay=1.5)
    result = await crawl(settings={"DOWNLOAD_TIMEOUT": 0.5, "RETRY_TIMES": 0}, url=url)
    assert result.manifest["pages"][0]["fetch"]["error"] == {
        "kind": "timeout",
        "message": f"request to {url} timed out after 500ms",
    }


@pytest_twisted.ensureDeferred
async def test_trickling_body_times_out(server, crawl):
    url = server.url("/trickle")
    server.routes["/trickle"] = Reply(chunks=[b"<p>x</p>"] * 10, chunk_delay=0.2)
    result = await crawl(settings={"DOWNLOAD_TIMEOUT": 0.6, "RETRY_TIMES": 1}, url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"]["kind"] == "timeout"
    assert fetch["warnings"] == [f"retry 1/1 for {url} after timeout"]


@pytest_twisted.ensureDeferred
async def test_body_over_maxsize_is_too_large(server, crawl):
    big = b"x" * (40 * 1024 * 1024)
    server.site(
        {
            "/": '<a href="/big">b</a><a href="/stream">s</a><a href="/small">s</a>',
            "/big": Reply(body=big, content_type="application/octet-stream"),
            "/stream": Reply(chunks=[b"y" * (1 << 20)] * 40, content_type="text/plain"),
            "/small": "fine",
        }
    )
    result = await crawl(url=server.url("/"))
    pages = result.manifest["pages"]
    for page in pages[1:3]:
        assert page["fetch"]["error"]["kind"] == "too-large", page
        assert page["fetch"]["error"]["message"].endswith("exceeds 33554432 bytes")
    assert "snapshot" in pages[3]["fetch"]
    assert server.count("/big") == 1  # not retried


@pytest_twisted.ensureDeferred
async def test_latin1_and_bom_pages_are_decoded_and_hashed(server, crawl):
    server.site(
        {
            "/": '<a href="/latin1">l</a><a href="/bom">b</a><a href="/meta">m</a>'
            '<a href="/bad">x</a>',
            "/latin1": Reply(body=b"caf\xe9", content_type="text/html; charset=iso-8859-1"),
            "/bom": Reply(body=b"\xef\xbb\xbfcaf\xc3\xa9", content_type="text/plain"),
            "/meta": Reply(
                body=b'<meta charset="iso-8859-1"><p>caf\xe9</p>', content_type="text/html"
            ),
            "/bad": Reply(body=b"caf\xe9", content_type="text/plain"),
        }
    )
    result = await crawl(url=server.url("/"))
    snaps = [p["fetch"]["snapshot"] for p in result.manifest["pages"][1:]]

    def h(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    assert snaps[0]["bodyHash"] == h("café")
    assert snaps[1]["bodyHash"] == h("café")
    assert snaps[2]["bodyHash"] == h('<meta charset="iso-8859-1"><p>café</p>')
    # No charset anywhere: UTF-8, invalid bytes become U+FFFD (Traverse's "café" example).
    assert snaps[3]["bodyHash"] == h("caf\ufffd")
    assert snaps[3]["bodyHash"].startswith("fb1552c13c0c")


@pytest_twisted.ensureDeferred
async def test_content_types_and_validators(server, crawl):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    server.site(
        {
            "/": '<a href="/img">i</a><a href="/doc">d</a><a href="/json">j</a>',
            "/img": Reply(
                body=png,
                content_type="image/png",
                headers={"ETag": 'W/"v1"', "Last-Modified": "Tue, 01 Jul 2026 00:00:00 GMT"},
            ),
            "/doc": Reply(body=b"%PDF-1.4 fake", content_type="application/pdf"),
            "/json": Reply(body='{"a": "<a href=/x>"}', content_type="application/json"),
        }
    )
    result = await crawl(url=server.url("/"))
    pages = result.manifest["pages"]
    img = pages[1]["fetch"]["snapshot"]
    assert img["contentType"] == "png"
    assert img["bodyHash"] == hashlib.sha256(png).hexdigest()
    assert img["etag"] == 'W/"v1"'
    assert img["lastModified"] == "Tue, 01 Jul 2026 00:00:00 GMT"
    assert pages[2]["fetch"]["snapshot"]["contentType"] == "pdf"
    assert pages[3]["fetch"]["snapshot"]["contentType"] == "text"
    assert len(pages) == 4  # no links from JSON


@pytest_twisted.ensureDeferred
async def test_retry_waits_its_backoff_not_the_origin_delay(server, crawl):
    server.site(
        {
            "/": '<a href="/flaky">f</a><a href="/next">n</a>',
            "/next": "next",
        }
    )
    server.routes["/flaky"] = sequence(Reply(503), Reply(body="ok"))
    result = await crawl(
        settings={"TRAVERSE_MIN_DELAY": 0.6, "TRAVERSE_RETRY_BACKOFF": 0.01},
        url=server.url("/"),
    )
    assert all("snapshot" in p["fetch"] for p in result.manifest["pages"])
    pages = sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)
    paths = [h.path for h in pages]
    # The retry goes to the head of the origin's queue, before /next, and waits its
    # backoff instead of the delay (the slot's table: test_component_politeness.py).
    assert paths == ["/", "/flaky", "/flaky", "/next"]
    retry = pages[2]
    # Every other request to the origin still keeps the minimum delay.
    others = [b.start - a.end for a, b in itertools.pairwise(pages) if b is not retry]
    assert min(others) >= 0.59, paths
