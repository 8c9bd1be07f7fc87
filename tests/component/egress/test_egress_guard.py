"""The egress guard in real crawls and the pinning resolver (docs/egress.md).

Only loopback is ever contacted: HTTP servers on 127.0.0.1 (and a decoy on
127.0.0.2), and a real DNS server on 127.0.0.1 that answers from a script, so a
name can "rebind" between two lookups the way an attacker's DNS would.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from typing import Any

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from twisted.internet import defer, reactor, task
from twisted.internet.error import DNSLookupError
from twisted.web.client import Agent, readBody

from tests.support.dnsserver import ScriptedDNS, installed
from tests.support.server import Handler, Reply, Server, serve
from traverse_crawl.egress import rules as egress
from traverse_crawl.egress.middleware import EgressGuardMiddleware
from traverse_crawl.egress.resolver import PinnedResolver

# -- a real DNS server on 127.0.0.1 (tests/support/dnsserver.py) ---------------------------------


@pytest.fixture
def scripted_dns() -> Iterator[ScriptedDNS]:
    """The scripted DNS server behind a ``PinnedResolver`` installed on the reactor."""
    yield from installed(ScriptedDNS())


class LoopbackServer(Server):
    """A test server on another loopback address and a given port (the decoy)."""

    def __init__(self, host: str, port: int) -> None:
        ThreadingHTTPServer.__init__(self, (host, port), Handler)
        self.routes = {}
        self.hits = []
        self.lock = threading.Lock()


@pytest.fixture
def server3() -> Iterator[Server]:
    """A third origin that the crawl fixture does NOT put in TRAVERSE_EGRESS_ALLOW."""
    yield from serve()


def error_of(result: Any, index: int = 0) -> dict[str, Any]:
    fetch = result.manifest["pages"][index]["fetch"]
    assert "error" in fetch, fetch
    return fetch["error"]  # type: ignore[no-any-return]


def refusal(url: str, why: str) -> str:
    return f"egress guard refused {url}: {why}; add the origin to TRAVERSE_EGRESS_ALLOW to allow it"


# -- crawls ---------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_loopback_origin_not_allowed_is_refused_before_any_request(server, crawl):
    server.site({"/": "<p>secret</p>", "/robots.txt": Reply(body="", content_type="text/plain")})
    url = server.url("/")
    result = await crawl(settings={"TRAVERSE_EGRESS_ALLOW": [], "RETRY_TIMES": 2}, url=url)
    assert error_of(result) == {
        "kind": "egress-denied",
        "message": refusal(url, "127.0.0.1 is a loopback address"),
    }
    assert server.paths() == []  # neither the page nor /robots.txt
    assert server.count("/robots.txt") == 0
    stats = result.stats
    assert stats["egress/denied"] == 1
    assert stats["egress/checked"] == 1
    assert "retry/count" not in stats
    assert len(result.items) == 1


@pytest_twisted.ensureDeferred
async def test_redirect_into_a_refused_origin_is_refused_at_that_hop(server, server3, crawl):
    target = server3.url("/internal")
    server3.site({"/internal": "<p>internal</p>"})
    server.site({"/start": Reply(302, headers={"Location": target})})
    result = await crawl(url=server.url("/start"))
    assert error_of(result) == {
        "kind": "egress-denied",
        "message": refusal(target, "127.0.0.1 is a loopback address"),
    }
    assert server.count("/start") == 1
    assert server3.paths() == []
    assert result.stats["egress/denied"] == 1
    assert result.stats["egress/allowed_by_setting"] >= 1


@pytest_twisted.ensureDeferred
async def test_localhost_is_refused_by_name(server, crawl):
    server.site({"/": "<p>home</p>"})
    port = server.server_address[1]
    url = f"http://localhost:{port}/"
    result = await crawl(url=url)  # only http://127.0.0.1:PORT is allowed
    assert error_of(result) == {
        "kind": "egress-denied",
        "message": refusal(url, "localhost is a name reserved for the local host"),
    }
    assert server.paths() == []


@pytest_twisted.ensureDeferred
async def test_guard_off_lets_a_loopback_crawl_through(server, crawl):
    server.site({"/": '<a href="/a.html">a</a>', "/a.html": "<p>a</p>"})
    result = await crawl(
        settings={"TRAVERSE_EGRESS_GUARD": False, "TRAVERSE_EGRESS_ALLOW": []},
        url=server.url("/"),
    )
    pages = result.manifest["pages"]
    assert [p["url"] for p in pages] == [server.url("/"), server.url("/a.html")]
    assert all("snapshot" in p["fetch"] for p in pages)
    assert server.count("/") == 1
    assert not any(key.startswith("egress/") for key in result.stats)


@pytest_twisted.ensureDeferred
async def test_allowed_origin_is_crawled_and_counted(server, crawl):
    server.site({"/": "<p>ok</p>"})
    result = await crawl(url=server.url("/"))
    assert "snapshot" in result.manifest["pages"][0]["fetch"]
    assert server.count("/") == 1
    assert result.stats["egress/allowed_by_setting"] == result.stats["egress/checked"]
    assert "egress/denied" not in result.stats


# -- DNS: every address checked, the checked one connected to ---------------------------


@pytest_twisted.ensureDeferred
async def test_rebinding_name_connects_to_the_checked_address(server, scripted_dns, crawl):
    """DNS answers 127.0.0.1 first, then 127.0.0.2, where a decoy listens on the same port."""
    port = server.server_address[1]
    server.site({"/page.html": "<p>real</p>"})
    decoy = LoopbackServer("127.0.0.2", port)
    decoy.site({"/page.html": "<p>decoy</p>"})
    thread = threading.Thread(target=decoy.serve_forever, daemon=True)
    thread.start()
    try:
        scripted_dns.answer("rebind.test", ["127.0.0.1"], ["127.0.0.2"])
        origin = f"http://rebind.test:{port}"
        result = await crawl(
            settings={"TRAVERSE_EGRESS_ALLOW": [origin], "ROBOTSTXT_OBEY": False},
            url=origin + "/page.html",
        )
    finally:
        decoy.shutdown()
        decoy.server_close()
    page = result.manifest["pages"][0]
    assert "snapshot" in page["fetch"], page
    assert server.count("/page.html") == 1
    assert decoy.paths() == []
    # One lookup, the guard's: the connection used the pin, not a second answer.
    assert scripted_dns.queries("rebind.test") == 1


@pytest_twisted.ensureDeferred
async def test_name_resolving_to_loopback_is_refused(server, scripted_dns, crawl):
    port = server.server_address[1]
    server.site({"/": "<p>x</p>"})
    # Any one non-public address among the answers is enough to refuse.
    scripted_dns.answer("mixed.test", ["93.184.216.34", "127.0.0.1"])
    url = f"http://mixed.test:{port}/"
    result = await crawl(settings={"ROBOTSTXT_OBEY": False}, url=url)
    assert error_of(result) == {
        "kind": "egress-denied",
        "message": refusal(url, "mixed.test resolves to 127.0.0.1, a loopback address"),
    }
    assert server.paths() == []


@pytest_twisted.ensureDeferred
async def test_dns_failure_is_a_retried_network_error(scripted_dns, crawl):
    url = "http://nxdomain.test:9/"
    result = await crawl(settings={"RETRY_TIMES": 1, "ROBOTSTXT_OBEY": False}, url=url)
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"] == {
        "kind": "network",
        "message": f"request to {url} failed: DNS lookup failed for nxdomain.test: "
        "no address found",
    }
    assert fetch["warnings"] == [f"retry 1/1 for {url} after network"]
    assert scripted_dns.queries("nxdomain.test") == 2
    assert "egress/denied" not in result.stats


@pytest_twisted.ensureDeferred
async def test_a_silent_dns_server_is_bounded_by_the_download_timeout(scripted_dns, crawl):
    scripted_dns.authority.silent.add("slow.test")
    url = "http://slow.test:9/"
    settings = {"RETRY_TIMES": 0, "ROBOTSTXT_OBEY": False, "DOWNLOAD_TIMEOUT": 0.3}
    result = await crawl(settings=settings, url=url)
    # The message names the bound that ended the lookup: DOWNLOAD_TIMEOUT, not DNS_TIMEOUT's 60 s.
    assert result.manifest["pages"][0]["fetch"]["error"] == {
        "kind": "network",
        "message": f"request to {url} failed: DNS lookup failed for slow.test: "
        "no answer within 0.3s",
    }


# -- the resolver on its own, under Twisted's HTTP client ------------------------------


async def get(url: str) -> bytes:
    """A plain Twisted HTTP client request: it connects through ``reactor.nameResolver``."""
    response = await Agent(reactor).request(b"GET", url.encode("ascii"))
    with warnings.catch_warnings():
        # Agent's own transport lacks abortConnection; harmless for these tiny bodies.
        warnings.simplefilter("ignore", DeprecationWarning)
        return await readBody(response)  # type: ignore[no-any-return]


async def hits(server: Server, path: str, expected: int) -> int:
    """The server records a hit after writing its reply: give its thread a moment."""
    for _ in range(100):
        if server.count(path) >= expected:
            break
        await task.deferLater(reactor, 0.01, lambda: None)
    return server.count(path)


@pytest_twisted.ensureDeferred
async def test_pinned_address_is_the_one_connected_to(server, scripted_dns):
    """``pinned.test`` is unknown to DNS: only the pin can take the connection to the server."""
    port = server.server_address[1]
    server.site({"/x": "<p>pinned</p>"})
    resolver = scripted_dns.resolver
    owner = object()
    resolver.guard(owner)
    try:
        resolver.pin("pinned.test", port, ["127.0.0.1"])
        assert resolver.pinned("PINNED.test", port) == ("127.0.0.1",)
        assert resolver.pinned("pinned.test", port + 1) is None
        body = await get(f"http://pinned.test:{port}/x")
    finally:
        resolver.release(owner)
    assert body == b"<p>pinned</p>"
    assert await hits(server, "/x", 1) == 1
    assert scripted_dns.queries("pinned.test") == 0
    assert resolver.pinned("pinned.test", port) is None  # released with the last guard


@pytest_twisted.ensureDeferred
async def test_guarded_resolver_refuses_an_unpinned_non_public_answer(server, scripted_dns):
    port = server.server_address[1]
    server.site({"/x": "<p>x</p>"})
    scripted_dns.answer("sneaky.test", ["127.0.0.1"])
    scripted_dns.answer("proxy.test", ["127.0.0.1"])
    resolver = scripted_dns.resolver
    owner = object()
    resolver.guard(owner, [("proxy.test", port)])
    try:
        with pytest.raises(DNSLookupError):
            await get(f"http://sneaky.test:{port}/x")
        assert server.paths() == []
        # an allowed origin's host (a proxy, say) passes unchecked
        assert await get(f"http://proxy.test:{port}/x") == b"<p>x</p>"
    finally:
        resolver.release(owner)
    # With no guarded crawl left it is an ordinary resolver again.
    assert await get(f"http://sneaky.test:{port}/x") == b"<p>x</p>"
    assert await hits(server, "/x", 2) == 2


@pytest_twisted.ensureDeferred
async def test_lookup_returns_every_address_and_ignores_pins(scripted_dns):
    scripted_dns.answer("two.test", ["127.0.0.1", "127.0.0.3"], ttl=42)
    resolver = scripted_dns.resolver
    resolver.pin("two.test", 80, ["127.0.0.9"])
    answer = await resolver.lookup("two.test", 80)
    assert sorted(answer.addresses) == ["127.0.0.1", "127.0.0.3"]
    assert answer.ttl == 42  # the records' TTL: the server gave it
    assert (await resolver.lookup("unknown.test", 80)).addresses == ()
    scripted_dns.answer("six.test", ["127.0.0.1", "2001:db8::1"], ttl=7)
    answer = await resolver.lookup("six.test", 80)
    assert sorted(answer.addresses) == ["127.0.0.1", "2001:db8::1"]  # A and AAAA
    assert answer.ttl == 7


# -- construction ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"TRAVERSE_EGRESS_GUARD": False},
        {"TRAVERSE_EGRESS_GUARD": "false"},
        {"TRAVERSE_MODE": "replay"},
    ],
)
def test_guard_is_off_when_disabled_or_replaying(settings):
    with pytest.raises(NotConfigured):
        EgressGuardMiddleware.from_crawler(get_crawler(settings_dict=settings))


def test_guard_installs_the_pinned_resolver_when_the_runner_did_not():
    previous = reactor.installNameResolver(PinnedResolver(reactor).underlying)
    try:
        middleware = EgressGuardMiddleware.from_crawler(get_crawler())
        assert reactor.nameResolver is middleware.resolver
        assert isinstance(middleware.resolver, PinnedResolver)
        again = EgressGuardMiddleware.from_crawler(get_crawler())
        assert again.resolver is middleware.resolver
    finally:
        reactor.installNameResolver(previous)


# -- the helper for the render component, with the system resolver ----------------------


@pytest_twisted.ensureDeferred
async def test_check_url_with_the_system_resolver():
    async def both() -> tuple[Any, Any]:
        allowed = await egress.check_url("http://localhost:1/", frozenset({"http://localhost:1"}))
        refused = await egress.check_url("http://localhost:1/", frozenset())
        return allowed, refused

    allowed, refused = await defer.Deferred.fromFuture(asyncio.ensure_future(both()))
    assert allowed is None
    assert refused is not None and refused.kind == "egress-denied"
