"""The request target sent is the WHATWG URL recorded, byte for byte.

A real server on loopback logs each request line's target as it arrived; the
manifest's page ``url``, the snapshot's ``url``/``redirects``, the ``sourceRef``
and that log must all show the same URL for every case of ``tests/support/tricky.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted
from twisted.internet import reactor
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IHostnameResolver
from zope.interface import implementer

from tests.support.server import Reply, Server, serve
from tests.support.sitemapsite import urlset
from tests.support.tricky import (
    CASES,
    NEXT_TARGET,
    PAGE,
    REDIRECT_START,
    REDIRECT_TARGETS,
    leaf,
    tricky_site,
)
from traverse_crawl.snapshots.source_ref import parse_source_ref

SETTINGS = {"TRAVERSE_MAX_PAGES": 60, "TRAVERSE_MAX_DEPTH": 2}


def by_url(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    pages = manifest["pages"]
    found = {page["url"]: page for page in pages}
    assert len(found) == len(pages), "a URL appears twice in the manifest"
    return found


def recorded(page: dict[str, Any]) -> tuple[str, str, list[str]]:
    """The snapshot's ``url``, the ``sourceRef``'s url and the redirect chain."""
    snapshot = page["fetch"]["snapshot"]
    ref = parse_source_ref(page["sourceRef"])
    assert ref is not None
    return snapshot["url"], ref.url, snapshot.get("redirects", [])


@pytest_twisted.ensureDeferred
async def test_every_tricky_link_is_requested_as_its_whatwg_url(server: Server, crawl: Any) -> None:
    tricky_site(server)
    check_tricky(server, await crawl(settings=SETTINGS, url=server.url(PAGE)))


def check_tricky(server: Server, result: Any) -> None:
    """The server log, the manifest, the snapshots and the feed agree on every case."""
    origin = server.origin
    pages = by_url(result.manifest)
    targets = [hit.target for hit in server.hits]
    wrong = []
    for case in CASES:
        url = origin + case.target
        page = pages.get(url)
        if page is None:
            wrong.append(f"{case.name}: no page {url!r} in the manifest")
            continue
        seen = (recorded(page), targets.count(case.target))
        if seen != ((url, url, []), 1):
            wrong.append(f"{case.name}: expected {url!r} once, got {seen!r}")
    assert not wrong, "\n".join(wrong)
    # The depth-2 link was resolved against the URL requested for its page.
    assert recorded(pages[origin + NEXT_TARGET])[:2] == (origin + NEXT_TARGET,) * 2
    # Every hop of the redirect chain went out as recorded.
    start = pages[origin + REDIRECT_START]
    assert recorded(start) == (
        origin + REDIRECT_TARGETS[-1],
        origin + REDIRECT_TARGETS[-1],
        [origin + target for target in REDIRECT_TARGETS[:-1]],
    )
    # In the order the hops reached the server: hits are logged when answered, and
    # the next hop's thread may log first, so order by when each request arrived.
    arrived = [hit.target for hit in sorted(server.hits, key=lambda hit: hit.start)]
    assert [t for t in arrived if t in REDIRECT_TARGETS] == REDIRECT_TARGETS
    # Nothing else was requested: no re-encoded twin of any URL.
    expected = {"/robots.txt", PAGE, NEXT_TARGET, *REDIRECT_TARGETS}
    expected.update(case.target for case in CASES)
    assert sorted(targets) == sorted(expected)
    # The feed's items are the manifest's pages.
    assert {item["url"]: item for item in result.items} == pages


@implementer(IHostnameResolver)
class LoopbackNames:
    """A test resolver: every ``*.localhost`` name is 127.0.0.1; other names go on."""

    def __init__(self, underlying: Any) -> None:
        self.underlying = getattr(underlying, "underlying", underlying)  # below any pinning

    def resolveHostName(
        self,
        receiver: Any,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        if not hostName.lower().endswith(".localhost"):
            return self.underlying.resolveHostName(
                receiver, hostName, portNumber, addressTypes, transportSemantics
            )
        receiver.resolutionBegan(None)
        if addressTypes is None or IPv4Address in addressTypes:
            receiver.addressResolved(IPv4Address("TCP", "127.0.0.1", portNumber))
        receiver.resolutionComplete()
        return None


@pytest.fixture
def loopback_names() -> Iterator[None]:
    previous = reactor.nameResolver  # type: ignore[attr-defined]
    reactor.installNameResolver(LoopbackNames(previous))  # type: ignore[attr-defined]
    try:
        yield
    finally:
        reactor.installNameResolver(previous)  # type: ignore[attr-defined]


@pytest.fixture
def port80() -> Iterator[Server]:
    """A server on the default port, on its own loopback address."""
    try:
        yield from serve("127.0.0.2", 80)
    except PermissionError:
        pytest.skip("binding port 80 needs root or CAP_NET_BIND_SERVICE")


@pytest_twisted.ensureDeferred
async def test_idn_host_uppercase_and_default_port(
    server: Server, port80: Server, crawl: Any, tmp_path: Any, loopback_names: None
) -> None:
    """The Host header and the target of an IDN seed and of a default-port seed."""
    port = server.server_address[1]
    idn = f"xn--bcher-kva.localhost:{port}"
    server.site({"/Idn/%C3%A4": f'<a href="HTTP://B\u00dcCHER.LOCALHOST:{port}/Up?">up</a>'})
    server.fallback = port80.fallback = leaf()
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        f"idn\tHTTP://B\u00dcCHER.localhost:{port}/Idn/\u00e4?\u00f6=\u00fc\ndefault\tHTTP://127.0.0.2:80/dp?\n",
        encoding="utf-8",
    )
    allow = [f"http://{idn}", "http://127.0.0.2"]
    result = await crawl(settings={**SETTINGS, "TRAVERSE_EGRESS_ALLOW": allow}, seeds=str(seeds))
    manifests = {m["seed"]["id"]: by_url(m) for m in result.manifests()}
    idn_pages, default_pages = manifests["idn"], manifests["default"]
    expected_idn = {
        f"http://{idn}/Idn/%C3%A4?%C3%B6=%C3%BC": "/Idn/%C3%A4?%C3%B6=%C3%BC",
        f"http://{idn}/Up?": "/Up?",
    }
    assert sorted(idn_pages) == sorted(expected_idn)
    for url, target in expected_idn.items():
        assert recorded(idn_pages[url]) == (url, url, [])
        hits = [hit for hit in server.hits if hit.target == target]
        assert [hit.headers["Host"] for hit in hits] == [idn]
    assert list(default_pages) == ["http://127.0.0.2/dp?"]
    assert recorded(default_pages["http://127.0.0.2/dp?"])[0] == "http://127.0.0.2/dp?"
    assert [(h.target, h.headers["Host"]) for h in port80.hits] == [
        ("/robots.txt", "127.0.0.2"),
        ("/dp?", "127.0.0.2"),
    ]


@pytest_twisted.ensureDeferred
async def test_sitemap_files_and_their_urls_are_requested_as_resolved(
    server: Server, crawl: Any
) -> None:
    o = server.origin
    sitemap = urlset(o + "/o?", o + "/o|p", o + "/c^d?x=^", o + "/{e}?{f}")
    server.site(
        {
            "/": "<p>no links</p>",
            "/robots.txt": Reply(body="Sitemap: /maps/s|1.xml?\n", content_type="text/plain"),
            "/maps/s|1.xml": Reply(body=sitemap, content_type="application/xml"),
        }
    )
    server.fallback = leaf()
    result = await crawl(settings={**SETTINGS, "TRAVERSE_SITEMAPS": "robots"}, url=o + "/")
    listed = ["/o?", "/o|p", "/c%5Ed?x=^", "/%7Be%7D?{f}"]
    assert [p["url"] for p in result.manifest["pages"]] == [o + "/"] + [o + t for t in listed]
    for page in result.manifest["pages"]:
        assert recorded(page) == (page["url"], page["url"], [])
    assert sorted(h.target for h in server.hits) == sorted(
        ["/robots.txt", "/maps/s|1.xml?", "/", *listed]
    )
