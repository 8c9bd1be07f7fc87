"""End-to-end crawls of real loopback servers: the frontier rules."""

from __future__ import annotations

import json
import random
import re
from urllib.parse import quote

import pytest
import pytest_twisted

from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name


def fixture_site(server: Server, other: str = "http://other.invalid") -> None:
    """Traverse's own crawl fixture, the site its crawl tests use."""
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


@pytest_twisted.ensureDeferred
async def test_max_pages_truncates_with_exact_warning(server, crawl):
    fixture_site(server)
    result = await crawl(settings={"TRAVERSE_MAX_PAGES": 3}, url=server.url("/home.html"))
    manifest = result.manifest
    assert [p["url"] for p in manifest["pages"]] == [
        server.url("/home.html"),
        server.url("/about.html"),
        server.url("/gear.html"),
    ]
    assert manifest["truncated"] is True
    assert manifest["warnings"] == [
        "maxPages cap (3) reached; 2 further URL(s) discovered but not fetched"
    ]
    assert server.count("/contact.html") == 0
    assert result.stats["frontier/truncated"] == 1


@pytest_twisted.ensureDeferred
async def test_exactly_max_pages_is_not_truncated(server, crawl):
    fixture_site(server)
    result = await crawl(settings={"TRAVERSE_MAX_PAGES": 5}, url=server.url("/home.html"))
    assert len(result.manifest["pages"]) == 5
    assert result.manifest["truncated"] is False
    assert result.manifest["warnings"] == []


@pytest_twisted.ensureDeferred
async def test_max_depth_fetches_but_never_parses_the_last_level(server, crawl):
    fixture_site(server)
    result = await crawl(settings={"TRAVERSE_MAX_DEPTH": 1}, url=server.url("/home.html"))
    manifest = result.manifest
    assert [(p["url"], p["depth"]) for p in manifest["pages"]] == [
        (server.url("/home.html"), 0),
        (server.url("/about.html"), 1),
        (server.url("/gear.html"), 1),
    ]
    assert manifest["truncated"] is False


@pytest_twisted.ensureDeferred
async def test_max_depth_zero_is_the_seed_only(server, crawl):
    fixture_site(server)
    result = await crawl(settings={"TRAVERSE_MAX_DEPTH": 0}, url=server.url("/home.html"))
    assert [p["url"] for p in result.manifest["pages"]] == [server.url("/home.html")]
    assert result.manifest["truncated"] is False


@pytest_twisted.ensureDeferred
async def test_max_pages_zero_fetches_nothing(server, crawl):
    fixture_site(server)
    result = await crawl(settings={"TRAVERSE_MAX_PAGES": 0}, url=server.url("/home.html#top"))
    manifest = result.manifest
    assert manifest["pages"] == []
    assert manifest["truncated"] is True
    assert manifest["warnings"] == [
        "maxPages cap (0) reached; 1 further URL(s) discovered but not fetched"
    ]
    assert manifest["seed"]["url"] == server.url("/home.html#top")
    assert server.hits == []
    assert result.items == []


@pytest_twisted.ensureDeferred
async def test_seed_redirecting_off_origin_is_recorded_but_not_followed(server, server2, crawl):
    server2.site({"/landing.html": '<a href="/deeper.html">deeper</a>'})
    server.site(
        {
            "/start.html": Reply(301, headers={"Location": server2.url("/landing.html")}),
        }
    )
    result = await crawl(url=server.url("/start.html"))
    manifest = result.manifest
    assert len(manifest["pages"]) == 1
    page = manifest["pages"][0]
    assert page["url"] == server.url("/start.html")
    assert page["fetch"]["snapshot"]["url"] == server2.url("/landing.html")
    assert page["fetch"]["snapshot"]["redirects"] == [server.url("/start.html")]
    final = quote(server2.url("/landing.html"), safe="")
    assert f"?url={final}&" in page["sourceRef"]
    assert manifest["warnings"] == [
        f"[depth 0] {server.url('/start.html')}: fetched page resolved off-host "
        f"({server2.url('/landing.html')}); its links were not followed"
    ]
    assert server2.count("/deeper.html") == 0


@pytest_twisted.ensureDeferred
async def test_redirected_page_links_resolve_against_final_url(server, crawl):
    server.site(
        {
            "/": '<a href="/old/">old</a>',
            "/old/": Reply(302, headers={"Location": "/new/dir/"}),
            "/new/dir/": '<a href="child.html">child</a><a href="../up.html">up</a>',
            "/new/dir/child.html": "child",
            "/new/up.html": "up",
        }
    )
    result = await crawl(settings={"TRAVERSE_MAX_DEPTH": 3}, url=server.url("/"))
    assert [p["url"] for p in result.manifest["pages"]] == [
        server.url("/"),
        server.url("/old/"),
        server.url("/new/dir/child.html"),
        server.url("/new/up.html"),
    ]


@pytest.mark.parametrize(
    ("seed_id", "encoded"),
    [("a::b", "a%3A%3Ab"), ("50% off", "50%25%20off"), ("my seed id", "my%20seed%20id")],
)
@pytest_twisted.ensureDeferred
async def test_seed_ids_with_colons_percent_and_spaces(server, crawl, seed_id, encoded):
    server.site({"/": '<a href="/x">x</a>', "/x": "x"})
    result = await crawl(url=server.url("/"), source_id=seed_id)
    manifest = result.manifest
    assert manifest["seed"]["id"] == seed_id
    assert [p["id"] for p in manifest["pages"]] == [
        f"{encoded}::{server.url('/')}",
        f"{encoded}::{server.url('/x')}",
    ]
    assert (result.manifest_dir / (source_dir_name(seed_id) + ".json")).is_file()
    assert manifest["pages"][0]["sourceRef"].startswith(
        "traverse-snapshot:" + quote(f"{encoded}::{server.url('/')}", safe="")
    )


@pytest_twisted.ensureDeferred
async def test_malformed_html_and_binary_junk_do_not_stop_the_crawl(server, crawl):
    junk = bytes(random.Random(7).randrange(256) for _ in range(5000))
    server.site(
        {
            "/": '<a href="/junk">j</a><a href="/broken">b</a><a href="/after">a</a>',
            "/junk": Reply(body=junk, content_type="text/html"),
            "/broken": '<html><body><a href="/ok">ok</a><div><p><a href="/unterminated',
            "/after": "after",
            "/ok": "ok",
        }
    )
    result = await crawl(settings={"TRAVERSE_MAX_DEPTH": 3}, url=server.url("/"))
    pages = result.manifest["pages"]
    assert [p["url"] for p in pages] == [
        server.url(p) for p in ("/", "/junk", "/broken", "/after", "/ok")
    ]
    assert all("snapshot" in p["fetch"] for p in pages)
    assert pages[1]["fetch"]["snapshot"]["contentType"] == "html"


@pytest.mark.parametrize(
    ("seed", "message"),
    [
        ("not a url", "SourceConfig.url is not a valid URL: not a url"),
        ("ftp://files.example.test/x", "unsupported URL protocol: ftp:"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_invalid_seed_url_is_an_invalid_url_page(crawl, seed, message):
    result = await crawl(url=seed)
    manifest = result.manifest
    assert manifest["seed"] == {"id": seed, "url": seed}
    assert len(manifest["pages"]) == 1
    page = manifest["pages"][0]
    assert page["url"] == seed and page["depth"] == 0
    assert page["fetch"] == {"error": {"kind": "invalid-url", "message": message}}
    assert "sourceRef" not in page
    assert manifest["truncated"] is False


def random_delay_site(server: Server, pages: int = 40, seed: int = 11) -> None:
    """A site whose every page answers after a random delay, links in a fixed pattern."""
    rng = random.Random(seed)
    delays = {f"/p{i}.html": rng.uniform(0, 0.06) for i in range(pages)}

    def page(i: int) -> str:
        targets = [(i * 3 + k) % pages for k in (1, 2, 5)] + [(i + 7) % pages]
        links = "".join(f'<a href="p{t}.html">p{t}</a>' for t in targets)
        return f"<html><body><h1>page {i}</h1>{links}</body></html>"

    for i in range(pages):
        path = f"/p{i}.html"
        server.routes[path] = Reply(body=page(i), delay=delays[path])


def without_timestamps(manifest: dict) -> dict:
    text = json.dumps(manifest, sort_keys=True)
    text = re.sub(r'"fetchedAt": "[^"]+"', '"fetchedAt": "T"', text)
    text = re.sub(r"fetchedAt=[^\"&]+", "fetchedAt=T", text)
    return json.loads(text)


@pytest_twisted.ensureDeferred
async def test_manifest_is_identical_at_any_concurrency(server, crawl, tmp_path):
    random_delay_site(server)
    settings = {"TRAVERSE_MAX_PAGES": 25, "TRAVERSE_MAX_DEPTH": 3}
    runs = []
    for concurrency in (1, 16, 16):
        result = await crawl(
            settings={
                **settings,
                "CONCURRENT_REQUESTS": concurrency,
                "TRAVERSE_MANIFEST_DIR": str(tmp_path / f"m{concurrency}-{len(runs)}"),
            },
            url=server.url("/p0.html"),
        )
        runs.append(without_timestamps(result.manifest))
    assert runs[0]["truncated"] is True
    assert len(runs[0]["pages"]) == 25
    assert runs[1] == runs[0]
    assert runs[2] == runs[0]


@pytest_twisted.ensureDeferred
async def test_pages_are_fetched_in_parallel(server, crawl):
    """Concurrency is real: 8 slow pages of one level overlap at the server."""
    links = "".join(f'<a href="/s{i}">s</a>' for i in range(8))
    server.site({"/": links, **{f"/s{i}": Reply(body="s", delay=0.3) for i in range(8)}})
    result = await crawl(settings={"CONCURRENT_REQUESTS": 16}, url=server.url("/"))
    assert len(result.manifest["pages"]) == 9
    slow = [h for h in server.hits if h.path.startswith("/s")]
    first_end = min(h.end for h in slow)
    assert sum(1 for h in slow if h.start < first_end) >= 4


@pytest_twisted.ensureDeferred
async def test_seeds_file_gives_each_seed_its_own_manifest(server, crawl, tmp_path):
    fixture_site(server)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(
        "# two seeds and a comment\n\n"
        f"{server.url('/about.html')}\n"
        f"gear\t{server.url('/gear.html')}\n"
        + json.dumps({"id": "home-text", "url": server.url("/home.html"), "content_type": "text"})
        + "\n",
        encoding="utf-8",
    )
    result = await crawl(settings={"TRAVERSE_MAX_PAGES": 2}, seeds=str(seeds))
    by_id = {m["seed"]["id"]: m for m in result.manifests()}
    assert set(by_id) == {server.url("/about.html"), "gear", "home-text"}
    assert [p["url"] for p in by_id["gear"]["pages"]] == [
        server.url("/gear.html"),
        server.url("/contact.html"),
    ]
    assert by_id["gear"]["truncated"] is True
    # The hint applies to the seed page only: text pages yield no links.
    home = by_id["home-text"]
    assert [p["url"] for p in home["pages"]] == [server.url("/home.html")]
    assert home["pages"][0]["fetch"]["snapshot"]["contentType"] == "text"


@pytest_twisted.ensureDeferred
async def test_closespider_writes_partial_manifest_with_reason(server, crawl):
    random_delay_site(server)
    result = await crawl(
        settings={"CLOSESPIDER_ITEMCOUNT": 3, "CONCURRENT_REQUESTS": 1, "TRAVERSE_MAX_PAGES": 30},
        url=server.url("/p0.html"),
    )
    manifest = result.manifest
    assert 3 <= len(manifest["pages"]) < 30
    assert manifest["truncated"] is True
    assert manifest["warnings"][-1].startswith(
        "crawl stopped before this seed finished (closespider_itemcount); "
    )
