"""End-to-end crawls of real loopback servers: the frontier rules (SPEC §13, issue 2)."""

from __future__ import annotations

import pytest_twisted

from tests.server import Server


def fixture_site(server: Server, other: str = "http://other.invalid") -> None:
    """Traverse's own crawl fixture (issue 2)."""
    home = server.url("/home.html")
    server.site(
        {
            "/home.html": f"""<html><body id=top>
                <a href="about.html">About</a>
                <a href="{server.url("/gear.html")}">Gear</a>
                <a href="{other}/elsewhere.html">Elsewhere</a>
                <a href="mailto:someone@example.test">Mail</a>
                <a href="home.html#top">Top</a></body></html>""",
            "/about.html": '<a href="contact.html">Contact</a>',
            "/gear.html": '<a href="contact.html">c</a><a href="gear.html?variant=green">g</a>',
            "/contact.html": f'<a href="{home}">home</a>',
            "/gear.html?variant=green": "<p>green</p>",
        }
    )


@pytest_twisted.ensureDeferred
async def test_fixture_site_bfs_order_and_depths(server, crawl):
    fixture_site(server)
    result = await crawl(url=server.url("/home.html"), source_id="crawl-1")
    manifest = result.manifest
    got = [(p["url"], p["depth"]) for p in manifest["pages"]]
    assert got == [
        (server.url("/home.html"), 0),
        (server.url("/about.html"), 1),
        (server.url("/gear.html"), 1),
        (server.url("/contact.html"), 2),
        (server.url("/gear.html?variant=green"), 2),
    ]
    assert manifest["truncated"] is False
    assert manifest["warnings"] == []
    assert manifest["seed"] == {"id": "crawl-1", "url": server.url("/home.html")}
    assert manifest["pages"][0]["id"] == "crawl-1::" + server.url("/home.html")
    assert all("snapshot" in p["fetch"] for p in manifest["pages"])
    assert sorted(i["url"] for i in result.items) == sorted(p["url"] for p in manifest["pages"])
