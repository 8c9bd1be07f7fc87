"""robots.txt in real crawls against loopback servers (docs/robots.md)."""

from __future__ import annotations

import gzip
import itertools
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted

from tests.support.server import Reply, Server

UA = "TestBot/1.0 (+https://example.invalid/bot)"
OBEY: dict[str, Any] = {"ROBOTSTXT_OBEY": True, "USER_AGENT": UA, "RETRY_TIMES": 0}
FAIL_OPEN = "proceeding (fail-open)"
RFC9309 = "disallowing all (rfc9309)"


def robots(body: str, status: int = 200, **kwargs: Any) -> Reply:
    return Reply(status, body, content_type="text/plain", **kwargs)


def denied(url: str) -> dict[str, str]:
    return {"kind": "robots-denied", "message": f"robots.txt disallows TestBot from {url}"}


def outcome(page: dict[str, Any]) -> str:
    fetch = page["fetch"]
    return "snapshot" if "snapshot" in fetch else fetch["error"]["kind"]


@pytest.fixture
def dead_origin() -> Iterator[str]:
    """A loopback port with a bound socket that never listens: connections are refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


@pytest_twisted.ensureDeferred
async def test_disallowed_page_is_denied_and_never_requested(server: Server, crawl: Any) -> None:
    server.routes["/robots.txt"] = robots(
        "User-agent: *\nDisallow: /\n\nUser-agent: testbot\nDisallow: /private\n"
    )
    server.site(
        {
            "/index.html": '<a href="/private/a.html">p</a> <a href="/public.html">q</a>',
            "/private/a.html": "secret",
            "/public.html": "hello",
        }
    )
    result = await crawl(settings=OBEY, url=server.url("/index.html"))
    pages = result.manifest["pages"]
    assert [(p["url"], outcome(p)) for p in pages] == [
        (server.url("/index.html"), "snapshot"),
        (server.url("/private/a.html"), "robots-denied"),
        (server.url("/public.html"), "snapshot"),
    ]
    assert pages[1]["fetch"] == {"error": denied(server.url("/private/a.html"))}
    assert server.count("/private/a.html") == 0
    assert server.count("/robots.txt") == 1
    robots_hit = next(h for h in server.hits if h.path == "/robots.txt")
    assert robots_hit.headers["Accept"] == "text/plain,*/*"
    assert robots_hit.headers["User-Agent"] == UA
    assert result.manifest["warnings"] == []
    assert result.stats["robots/denied"] == 1
    assert result.stats["robots/fetched"] == 1


@pytest_twisted.ensureDeferred
async def test_robots_fetched_once_per_origin_across_many_pages(server: Server, crawl: Any) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /nope\n")
    links = "".join(f'<a href="/p{i}.html">{i}</a>' for i in range(8))
    server.site({"/index.html": links, **{f"/p{i}.html": f"page {i}" for i in range(8)}})
    result = await crawl(
        settings={**OBEY, "CONCURRENT_REQUESTS": 16}, url=server.url("/index.html")
    )
    assert [outcome(p) for p in result.manifest["pages"]] == ["snapshot"] * 9
    assert server.count("/robots.txt") == 1
    assert result.stats["robots/fetched"] == 1


@pytest_twisted.ensureDeferred
async def test_concurrent_seeds_share_one_robots_load_and_one_warning(
    server: Server, crawl: Any, tmp_path: Any
) -> None:
    # A slow 503: every seed's first request arrives while the load is in flight.
    server.routes["/robots.txt"] = robots("", 503, delay=0.3)
    server.site({f"/s{i}.html": f"seed {i}" for i in range(4)})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"seed-{i}\t{server.url(f'/s{i}.html')}\n" for i in range(4)))
    result = await crawl(settings=OBEY, seeds=str(seeds))
    manifests = result.manifests()
    assert len(manifests) == 4
    assert all(outcome(m["pages"][0]) == "snapshot" for m in manifests)
    assert server.count("/robots.txt") == 1
    warning = f"robots.txt for {server.origin} returned 503; {FAIL_OPEN}"
    warned = [m["pages"][0]["fetch"].get("warnings") for m in manifests]
    assert sorted(warned, key=bool) == [None, None, None, [warning]]
    assert result.stats["robots/fail_open"] == 1


@pytest.mark.parametrize("policy", ["fail-open", "rfc9309"])
@pytest.mark.parametrize("status", [500, 503, 429])
@pytest_twisted.ensureDeferred
async def test_robots_server_errors(server: Server, crawl: Any, status: int, policy: str) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", status)
    server.site({"/index.html": '<a href="/next.html">n</a>', "/next.html": "next"})
    seed = server.url("/index.html")
    settings = {**OBEY, "TRAVERSE_ROBOTS_POLICY": policy}
    result = await crawl(settings=settings, url=seed)
    tail = FAIL_OPEN if policy == "fail-open" else RFC9309
    warning = f"robots.txt for {server.origin} returned {status}; {tail}"
    manifest = result.manifest
    assert manifest["warnings"] == [f"[depth 0] {seed}: {warning}"]
    assert manifest["pages"][0]["fetch"]["warnings"] == [warning]
    assert server.count("/robots.txt") == 1  # a single attempt: robots.txt is never retried
    if policy == "fail-open":
        assert [outcome(p) for p in manifest["pages"]] == ["snapshot", "snapshot"]
        assert "warnings" not in manifest["pages"][1]["fetch"]  # cached rules reused silently
        assert result.stats["robots/fail_open"] == 1
    else:
        assert manifest["pages"][0]["fetch"]["error"] == denied(seed)
        assert server.count("/index.html") == 0
        assert result.stats["robots/disallow_all"] == 1


@pytest.mark.parametrize("policy", ["fail-open", "rfc9309"])
@pytest.mark.parametrize("status", [404, 401, 403])
@pytest_twisted.ensureDeferred
async def test_robots_client_errors_allow_all_silently(
    server: Server, crawl: Any, status: int, policy: str
) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", status)
    server.site({"/index.html": "home"})
    settings = {**OBEY, "TRAVERSE_ROBOTS_POLICY": policy}
    result = await crawl(settings=settings, url=server.url("/index.html"))
    assert outcome(result.manifest["pages"][0]) == "snapshot"
    assert result.manifest["warnings"] == []
    assert server.count("/index.html") == 1
    assert "robots/fail_open" not in result.stats
    assert "robots/disallow_all" not in result.stats


@pytest.mark.parametrize("policy", ["fail-open", "rfc9309"])
@pytest_twisted.ensureDeferred
async def test_robots_connection_refused(crawl: Any, dead_origin: str, policy: str) -> None:
    seed = dead_origin + "/page.html"
    settings = {**OBEY, "TRAVERSE_ROBOTS_POLICY": policy, "TRAVERSE_EGRESS_ALLOW": [dead_origin]}
    result = await crawl(settings=settings, url=seed)
    page = result.manifest["pages"][0]
    tail = FAIL_OPEN if policy == "fail-open" else RFC9309
    warning = f"robots.txt for {dead_origin} unreachable (network); {tail}"
    assert result.manifest["warnings"] == [f"[depth 0] {seed}: {warning}"]
    assert page["fetch"]["warnings"] == [warning]
    if policy == "fail-open":
        assert page["fetch"]["error"]["kind"] == "network"  # the page itself was tried
    else:
        assert page["fetch"]["error"] == denied(seed)


@pytest.mark.parametrize("policy", ["fail-open", "rfc9309"])
@pytest_twisted.ensureDeferred
async def test_robots_timeout(server: Server, crawl: Any, policy: str) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", delay=1.0)
    server.site({"/index.html": "home"})
    seed = server.url("/index.html")
    settings = {**OBEY, "TRAVERSE_ROBOTS_POLICY": policy, "DOWNLOAD_TIMEOUT": 0.3}
    result = await crawl(settings=settings, url=seed)
    page = result.manifest["pages"][0]
    tail = FAIL_OPEN if policy == "fail-open" else RFC9309
    warning = f"robots.txt for {server.origin} unreachable (timeout); {tail}"
    assert result.manifest["warnings"] == [f"[depth 0] {seed}: {warning}"]
    if policy == "fail-open":
        assert outcome(page) == "snapshot"
        assert server.count("/index.html") == 1
    else:
        assert page["fetch"]["error"] == denied(seed)
        assert server.count("/index.html") == 0


@pytest_twisted.ensureDeferred
async def test_redirect_hop_into_disallowed_path_same_origin(server: Server, crawl: Any) -> None:
    server.routes["/robots.txt"] = robots("User-agent: testbot\nDisallow: /private\n")
    server.routes["/start"] = Reply(302, headers={"Location": "/private/x"})
    server.site({"/private/x": "secret"})
    result = await crawl(settings=OBEY, url=server.url("/start"))
    assert result.manifest["pages"][0]["fetch"] == {"error": denied(server.url("/private/x"))}
    assert server.count("/start") == 1
    assert server.count("/private/x") == 0
    assert server.count("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_redirect_hop_into_disallowed_path_other_origin(
    server: Server, server2: Server, crawl: Any
) -> None:
    server.routes["/robots.txt"] = robots("", 404)
    server2.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    server.routes["/start"] = Reply(302, headers={"Location": server2.url("/private/x")})
    server2.site({"/private/x": "secret"})
    result = await crawl(settings=OBEY, url=server.url("/start"))
    assert result.manifest["pages"][0]["fetch"] == {"error": denied(server2.url("/private/x"))}
    assert server2.paths() == ["/robots.txt"]
    assert server.paths() == ["/robots.txt", "/start"]


@pytest_twisted.ensureDeferred
async def test_redirect_hop_carries_the_new_origins_warning(
    server: Server, server2: Server, crawl: Any
) -> None:
    server.routes["/robots.txt"] = robots("", 404)
    server2.routes["/robots.txt"] = robots("", 500)
    server.routes["/start"] = Reply(302, headers={"Location": server2.url("/ok")})
    server2.site({"/ok": "fine"})
    seed = server.url("/start")
    result = await crawl(settings=OBEY, url=seed)
    warning = f"robots.txt for {server2.origin} returned 500; {FAIL_OPEN}"
    offhost = f"fetched page resolved off-host ({server2.url('/ok')}); its links were not followed"
    assert result.manifest["warnings"] == [
        f"[depth 0] {seed}: {warning}",
        f"[depth 0] {seed}: {offhost}",
    ]
    assert result.manifest["pages"][0]["fetch"]["warnings"] == [warning]
    assert result.manifest["pages"][0]["fetch"]["snapshot"]["url"] == server2.url("/ok")


@pytest.mark.parametrize("maxsize", [None, 100 * 1024])
@pytest_twisted.ensureDeferred
async def test_only_the_first_500_kib_of_robots_are_read(
    server: Server, crawl: Any, maxsize: int | None
) -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    body = head + b"#" * (520 * 1024) + b"\nDisallow: /late\n"
    body += b"#" * (600 * 1024 - len(body))
    chunks = [body[i : i + 8192] for i in range(0, len(body), 8192)]
    server.routes["/robots.txt"] = Reply(
        body=b"", content_type="text/plain", chunks=chunks, chunk_delay=0.001
    )
    server.site(
        {"/index.html": '<a href="/early">e</a><a href="/late">l</a>', "/early": "e", "/late": "l"}
    )
    # A DOWNLOAD_MAXSIZE below the robots.txt size does not make it unreachable.
    settings = {**OBEY, **({"DOWNLOAD_MAXSIZE": maxsize} if maxsize else {})}
    result = await crawl(settings=settings, url=server.url("/index.html"))
    assert result.manifest["warnings"] == []
    assert [outcome(p) for p in result.manifest["pages"]] == [
        "snapshot",
        "robots-denied",
        "snapshot",
    ]
    assert server.count("/early") == 0
    assert server.count("/late") == 1
    # The download stopped soon after 500 KiB: the rest never crossed the wire.
    assert result.stats["downloader/response_bytes"] < 600 * 1024


@pytest.mark.parametrize("matcher", ["traverse", "rfc9309"])
@pytest_twisted.ensureDeferred
async def test_rfc9309_crawl_delay_raises_the_gap(server: Server, crawl: Any, matcher: str) -> None:
    # Crawl-delay 60 is capped to 0.4 s by TRAVERSE_ROBOTS_CRAWL_DELAY_MAX.
    server.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 60\nDisallow: /*.pdf\n")
    server.site(
        {
            "/index.html": '<a href="/a.html">a</a><a href="/b.html">b</a><a href="/c.pdf">c</a>',
            "/a.html": "a",
            "/b.html": "b",
            "/c.pdf": Reply(body=b"%PDF-1.4", content_type="application/pdf"),
        }
    )
    settings = {
        **OBEY,
        "TRAVERSE_ROBOTS_MATCHER": matcher,
        "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": 0.4,
    }
    result = await crawl(settings=settings, url=server.url("/index.html"))
    hits = sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)
    gaps = [b.start - a.end for a, b in itertools.pairwise(hits)]
    outcomes = [outcome(p) for p in result.manifest["pages"]]
    if matcher == "rfc9309":
        assert outcomes == ["snapshot", "snapshot", "snapshot", "robots-denied"]
        assert [h.path for h in hits] == ["/index.html", "/a.html", "/b.html"]
        assert min(gaps) >= 0.35
        assert result.crawler.engine.downloader.slots[server.origin].delay == 0.4
    else:
        # Traverse's matcher: no wildcards, no Crawl-delay: the origin's slot keeps the
        # minimum delay, 0 here (the decision: test_component_robots_egress_revalidate.py).
        assert outcomes == ["snapshot"] * 4
        assert result.crawler.engine.downloader.slots[server.origin].delay == 0.0


@pytest_twisted.ensureDeferred
async def test_robotstxt_obey_false_never_requests_robots(server: Server, crawl: Any) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    server.site({"/index.html": "home"})
    result = await crawl(
        settings={**OBEY, "ROBOTSTXT_OBEY": "false"}, url=server.url("/index.html")
    )
    assert outcome(result.manifest["pages"][0]) == "snapshot"
    assert server.paths() == ["/index.html"]


@pytest_twisted.ensureDeferred
async def test_compressed_robots_cannot_inflate_past_download_maxsize(
    server: Server, crawl: Any
) -> None:
    bomb = gzip.compress(b"User-agent: *\nDisallow: /\n" + b"#" * (8 * 1024 * 1024))
    assert len(bomb) < 100 * 1024
    server.routes["/robots.txt"] = Reply(
        body=bomb, content_type="text/plain", headers={"Content-Encoding": "gzip"}
    )
    server.site({"/index.html": "home"})
    seed = server.url("/index.html")
    result = await crawl(settings={**OBEY, "DOWNLOAD_MAXSIZE": 1024 * 1024}, url=seed)
    warning = f"robots.txt for {server.origin} unreachable (network); {FAIL_OPEN}"
    assert result.manifest["warnings"] == [f"[depth 0] {seed}: {warning}"]
    assert outcome(result.manifest["pages"][0]) == "snapshot"


@pytest_twisted.ensureDeferred
async def test_compressed_robots_is_parsed(server: Server, crawl: Any) -> None:
    body = gzip.compress(b"User-agent: *\nDisallow: /private\n")
    server.routes["/robots.txt"] = Reply(
        body=body, content_type="text/plain", headers={"Content-Encoding": "gzip"}
    )
    server.site({"/private": "secret"})
    result = await crawl(settings=OBEY, url=server.url("/private"))
    assert result.manifest["pages"][0]["fetch"] == {"error": denied(server.url("/private"))}
    assert server.count("/private") == 0


@pytest_twisted.ensureDeferred
async def test_crawl_delay_does_not_follow_a_redirect_to_another_origin(
    server: Server, server2: Server, crawl: Any
) -> None:
    server.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 60\n")
    server2.routes["/robots.txt"] = robots("", 404)
    server.routes["/go"] = Reply(302, headers={"Location": server2.url("/hop")})
    server2.routes["/hop"] = Reply(302, headers={"Location": "/final"})
    server2.site({"/final": "done"})
    settings = {
        **OBEY,
        "TRAVERSE_ROBOTS_MATCHER": "rfc9309",
        "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": 1.0,
    }
    result = await crawl(settings=settings, url=server.url("/go"))
    assert result.manifest["pages"][0]["fetch"]["snapshot"]["url"] == server2.url("/final")
    assert [h.path for h in server2.hits if h.path != "/robots.txt"] == ["/hop", "/final"]
    # The hop's meta does not carry server's Crawl-delay to server2
    # (test_component_robots_egress_revalidate.py::test_robots_decision), so no slot
    # of server2 waits it: every slot's delay is the minimum, 0 here.
    slots = result.crawler.engine.downloader.slots
    assert slots[server2.origin].delay == 0.0
    assert slots[server.origin].delay == 1.0
