"""Hostile pages in real crawls: a page that costs libxml2 time delays no other seed, and
links past the per-page cap are not followed (the pure bounds: tests/unit/crawl)."""

from __future__ import annotations

import itertools

import pytest_twisted

from tests.unit.crawl.test_hostile_pages import attribute_bomb


@pytest_twisted.ensureDeferred
async def test_hostile_page_does_not_delay_another_seed(server, server2, crawl, tmp_path):
    bomb = attribute_bomb(250_000)  # 2.6 MB, a minute of libxml2 time unbounded
    server.site({"/": bomb, "/next": "n", "/after": "a"})
    server2.site(
        {
            "/": "".join(f'<a href="/p{i}">p</a>' for i in range(8)),
            **{f"/p{i}": "page" for i in range(8)},
        }
    )
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"hostile\t{server.url('/')}\ncalm\t{server2.url('/')}\n")
    result = await crawl(settings={"TRAVERSE_MIN_DELAY": 0.3}, seeds=str(seeds))
    by_id = {m["seed"]["id"]: m for m in result.manifests()}
    hostile, calm = by_id["hostile"], by_id["calm"]
    first = hostile["pages"][0]
    assert "snapshot" in first["fetch"]  # the page keeps its snapshot ...
    assert first["fetch"]["warnings"][0].startswith("1 tag(s) with more than")  # ... and says so
    assert [p["url"] for p in hostile["pages"][1:]] == [server.url("/next"), server.url("/after")]
    assert len(calm["pages"]) == 9
    # Measured at the server: the calm seed's requests never wait more than a
    # second beyond its own delay while the hostile page is processed.
    starts = sorted(h.start for h in server2.hits if h.path != "/robots.txt")
    assert max(b - a for a, b in itertools.pairwise(starts)) < 0.3 + 1.0


@pytest_twisted.ensureDeferred
async def test_links_per_page_are_capped_with_a_warning(server, crawl):
    server.site({"/": "".join(f'<a href="/p{i}">p</a>' for i in range(50))})
    result = await crawl(
        settings={"TRAVERSE_MAX_LINKS_PER_PAGE": 10, "TRAVERSE_MAX_PAGES": 100},
        url=server.url("/"),
    )
    manifest = result.manifest
    assert [p["url"] for p in manifest["pages"][1:]] == [server.url(f"/p{i}") for i in range(10)]
    warning = (
        "more than 10 links on the page; only the first 10 were followed "
        "(TRAVERSE_MAX_LINKS_PER_PAGE)"
    )
    assert manifest["pages"][0]["fetch"]["warnings"] == [warning]
    assert f"[depth 0] {server.url('/')}: {warning}" in manifest["warnings"]
