"""The egress guard keeps each DNS answer for a bounded lifetime.

A real DNS server on 127.0.0.1 (``tests/support/dnsserver.py``) answers from a script and
counts its queries; HTTP servers listen on 127.0.0.1 and 127.0.0.2. Time is a
fake clock (``ScriptedDNS.clock``) the test or a server route advances, so an
answer expires exactly when the test says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import CannotResolveHostError
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from tests.support.dnsserver import ScriptedDNS, installed
from tests.support.server import Handler, Reply, Server, serve
from traverse_crawl.egress.middleware import EgressGuardMiddleware
from traverse_crawl.fetch.exceptions import PageFailed


@pytest.fixture
def dns() -> Iterator[ScriptedDNS]:
    """The scripted DNS server; the guard's lookups get the records' TTL."""
    yield from installed(ScriptedDNS(with_ttl=True))


@pytest.fixture
def dns_without_ttl() -> Iterator[ScriptedDNS]:
    """The same server seen only through addresses, like getaddrinfo: no TTL."""
    yield from installed(ScriptedDNS(with_ttl=False))


@pytest.fixture
def decoy(server: Server) -> Iterator[Server]:
    """A second server on 127.0.0.2, on the same port as ``server``."""
    yield from serve("127.0.0.2", server.server_address[1])


@contextmanager
def guarding(settings: dict[str, Any] | None = None) -> Iterator[EgressGuardMiddleware]:
    """The guard of a crawl with ``settings``, between spider_opened and spider_closed."""
    middleware = EgressGuardMiddleware.from_crawler(get_crawler(settings_dict=settings or {}))
    middleware.spider_opened()
    try:
        yield middleware
    finally:
        middleware.spider_closed()


async def check(middleware: EgressGuardMiddleware, url: str) -> None:
    # The middleware awaits asyncio futures (the asyncio reactor): run it as a task.
    await defer.Deferred.fromFuture(asyncio.ensure_future(middleware.process_request(Request(url))))


# -- in a crawl -----------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_an_answer_is_reused_within_its_ttl_and_resolved_again_after(
    server, decoy, dns, crawl
):
    """cached.test answers 127.0.0.1 for 30 s, then 127.0.0.2 (where the decoy listens).

    Serving /b.html moves the clock past the 30 s, so the next request, /c.html,
    finds the answer expired: it is resolved again, checked, pinned, and its new
    connection goes to the new address.
    """
    port = server.server_address[1]
    dns.answer("cached.test", ["127.0.0.1"], ["127.0.0.2"], ttl=30)
    links = '<a href="/a.html">a</a><a href="/b.html">b</a><a href="/c.html">c</a>'
    server.site({"/": links, "/a.html": "<p>a</p>", "/robots.txt": Reply(body="")})

    def expire(handler: Handler) -> Reply:
        dns.clock.advance(31)
        # Closed, so the next request opens a connection (an open one stays where it is).
        return Reply(body="<p>b</p>", headers={"Connection": "close"})

    server.routes["/b.html"] = expire
    decoy.site({"/c.html": "<p>c, from 127.0.0.2</p>"})
    origin = f"http://cached.test:{port}"
    settings = {"TRAVERSE_EGRESS_ALLOW": [origin], "CONCURRENT_REQUESTS": 1}
    result = await crawl(settings=settings, url=origin + "/")
    pages = {p["url"]: p for p in result.manifest["pages"]}
    assert all("snapshot" in p["fetch"] for p in pages.values()), [
        p["fetch"] for p in pages.values()
    ]
    assert server.paths() == ["/robots.txt", "/", "/a.html", "/b.html"]
    assert decoy.paths() == ["/c.html"]
    # robots.txt, /, /a.html, /b.html shared the first answer; /c.html asked again.
    assert dns.queries("cached.test") == 2
    assert result.stats["egress/dns_lookup"] == 2
    assert result.stats["egress/dns_reused"] == 3
    assert result.stats["egress/checked"] == 5


@pytest_twisted.ensureDeferred
async def test_a_redirect_to_another_host_is_resolved_and_checked(server, dns, crawl):
    port = server.server_address[1]
    dns.answer("a.test", ["127.0.0.1"], ttl=300)
    dns.answer("b.test", ["127.0.0.1"], ttl=300)
    target = f"http://b.test:{port}/x"
    server.site({"/start": Reply(302, headers={"Location": target}), "/x": "<p>x</p>"})
    origin = f"http://a.test:{port}"
    settings = {"TRAVERSE_EGRESS_ALLOW": [origin], "ROBOTSTXT_OBEY": False}
    result = await crawl(settings=settings, url=origin + "/start")
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch["error"] == {
        "kind": "egress-denied",
        "message": f"egress guard refused {target}: b.test resolves to 127.0.0.1, "
        "a loopback address; add the origin to TRAVERSE_EGRESS_ALLOW to allow it",
    }
    assert server.paths() == ["/start"]
    assert dns.queries("a.test") == 1
    assert dns.queries("b.test") == 1


@pytest_twisted.ensureDeferred
async def test_ttl_max_zero_resolves_for_every_request(server, dns, crawl):
    port = server.server_address[1]
    dns.answer("every.test", ["127.0.0.1"], ttl=300)
    server.site({"/": '<a href="/a.html">a</a>', "/a.html": "<p>a</p>"})
    origin = f"http://every.test:{port}"
    settings = {"TRAVERSE_EGRESS_ALLOW": [origin], "TRAVERSE_DNS_TTL_MAX": 0}
    result = await crawl(settings=settings, url=origin + "/")
    assert len(result.manifest["pages"]) == 2
    assert dns.queries("every.test") == 3  # robots.txt, /, /a.html
    assert "egress/dns_reused" not in result.stats


# -- the guard on its own, with a public name that rebinds ------------------------------


@pytest_twisted.ensureDeferred
async def test_a_rebinding_answer_after_expiry_is_refused_and_the_pin_kept(dns):
    """public.test answers a public address for 5 s, then a private one."""
    dns.answer("public.test", ["93.184.216.34"], ["10.0.0.7"], ttl=5)
    with guarding() as middleware:
        await check(middleware, "http://public.test/a")
        dns.clock.advance(4.9)
        await check(middleware, "http://public.test/b")
        assert dns.queries("public.test") == 1
        dns.clock.advance(0.2)
        with pytest.raises(PageFailed) as refused:
            await check(middleware, "http://public.test/c")
        assert refused.value.error.message == (
            "egress guard refused http://public.test/c: public.test resolves to 10.0.0.7, "
            "a private address (10.0.0.0/8); add the origin to TRAVERSE_EGRESS_ALLOW to allow it"
        )
        assert dns.queries("public.test") == 2
        # A connection to public.test still goes to the checked address only.
        assert dns.resolver.pinned("public.test", 80) == ("93.184.216.34",)
        # The refused answer is kept for its TTL too, and refused on every request.
        with pytest.raises(PageFailed):
            await check(middleware, "http://public.test/d")
        assert dns.queries("public.test") == 2


async def kept_for(dns: ScriptedDNS, middleware: EgressGuardMiddleware, seconds: float) -> None:
    """kept.test's answer is reused until ``seconds`` after its lookup, not after."""
    await check(middleware, "http://kept.test/")
    dns.clock.advance(seconds - 0.1)
    await check(middleware, "http://kept.test:8080/")  # another port, same host
    assert dns.queries("kept.test") == 1
    dns.clock.advance(0.2)
    await check(middleware, "http://kept.test/")
    assert dns.queries("kept.test") == 2


@pytest.mark.parametrize(
    ("ttl", "kept"),
    [(45, 45), (0, 1), (86400, 120)],  # its own TTL; a floor of 1 s; capped by the setting
)
@pytest_twisted.ensureDeferred
async def test_an_answer_is_kept_for_its_ttl_within_bounds(dns, ttl, kept):
    dns.answer("kept.test", ["93.184.216.34"], ttl=ttl)
    with guarding({"TRAVERSE_DNS_TTL_MAX": 120}) as middleware:
        await kept_for(dns, middleware, kept)


@pytest_twisted.ensureDeferred
async def test_an_answer_without_ttl_is_kept_sixty_seconds(dns_without_ttl):
    dns_without_ttl.answer("kept.test", ["93.184.216.34"], ttl=3600)  # unseen: addresses only
    with guarding() as middleware:
        await kept_for(dns_without_ttl, middleware, 60)


@pytest_twisted.ensureDeferred
async def test_a_failed_lookup_is_not_kept(dns):
    with guarding() as middleware:
        for _ in range(2):
            with pytest.raises(CannotResolveHostError):
                await check(middleware, "http://nowhere.test/")
    assert dns.queries("nowhere.test") == 2
