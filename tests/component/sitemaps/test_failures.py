"""Sitemaps that fail, mislead or attack; determinism, politeness and replay."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from itertools import pairwise

import pytest
import pytest_twisted

from tests.component.crawl.test_bfs_crawl import random_delay_site, without_timestamps
from tests.support.server import Reply, Server, serve
from tests.support.sitemapsite import XML, index, listed, shop, urls_and_depths, urlset
from traverse_crawl.sitemaps.requests import sitemap_id
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

ROBOTS = {"TRAVERSE_SITEMAPS": "robots", "TRAVERSE_MAX_DEPTH": 1}

LAUGHS = (
    '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)
    )
    + "]><urlset><url><loc>http://x/&lol9;</loc></url></urlset>"
)


@pytest.fixture
def refused() -> Iterator[Server]:
    """A loopback server the egress guard refuses (not in TRAVERSE_EGRESS_ALLOW)."""
    yield from serve()


@pytest.mark.parsing
@pytest_twisted.ensureDeferred
async def test_malformed_404_and_refused_sitemaps_warn_and_the_seed_completes(
    server, refused, crawl
):
    u = server.url
    truncated = urlset(u("/orphan1.html"), u("/orphan2.html"))[:-30]  # cut inside the 2nd <loc>
    robots = listed(server, "/broken.xml", "/missing.xml") + (
        f"Sitemap: {refused.url('/sitemap.xml')}\nSitemap: {u('/good.xml')}\n"
    )
    refused.routes["/sitemap.xml"] = Reply(body=urlset(u("/orphan3.html")), content_type=XML)
    shop(server, robots, **{"broken.xml": truncated, "good.xml": urlset(u("/orphan3.html"))})
    result = await crawl(settings=ROBOTS, url=u("/"))
    manifest = result.manifest
    # The entry closed before the error stands; the cut one is not read in part.
    assert [p["url"] for p in manifest["pages"]] == [
        u("/"),
        u("/a.html"),
        u("/b.html"),
        u("/orphan1.html"),
        u("/orphan3.html"),
    ]
    assert all("snapshot" in p["fetch"] for p in manifest["pages"])
    broken, missing, denied = manifest["warnings"]
    assert broken.startswith(f"sitemap {u('/broken.xml')}: malformed XML (")
    assert missing == f"sitemap {u('/missing.xml')}: HTTP 404"
    assert denied.startswith(f"sitemap {refused.url('/sitemap.xml')}: egress guard refused ")
    assert refused.hits == []  # nothing reached the refused origin
    assert result.stats["sitemap/error"] == 3
    assert result.stats["sitemap/fetched"] == 2
    assert manifest["truncated"] is False


@pytest_twisted.ensureDeferred
async def test_a_sitemap_disallowed_by_robots_is_not_fetched(server, crawl):
    u = server.url
    robots = (
        "User-agent: *\nDisallow: /private/\n"
        f"Sitemap: {u('/private/sitemap.xml')}\nSitemap: {u('/sitemap.xml')}\n"
    )
    shop(
        server,
        robots,
        **{
            "private/sitemap.xml": urlset(u("/orphan1.html")),
            "sitemap.xml": urlset(u("/orphan2.html")),
        },
    )
    result = await crawl(settings=ROBOTS, url=u("/"))
    assert server.count("/private/sitemap.xml") == 0
    assert [p["url"] for p in result.manifest["pages"]][3:] == [u("/orphan2.html")]
    assert result.manifest["warnings"] == [
        f"sitemap {u('/private/sitemap.xml')}: robots.txt disallows traverse_crawl-bot "
        f"from {u('/private/sitemap.xml')}"
    ]


@pytest.mark.parsing
@pytest_twisted.ensureDeferred
async def test_entity_expansion_sitemap_is_harmless(server, crawl):
    u = server.url
    xxe = (
        '<?xml version="1.0"?><!DOCTYPE u [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
        f"<urlset><url><loc>{u('/')}&x;</loc></url><url><loc>{u('/orphan1.html')}</loc></url>"
        "</urlset>"
    )
    shop(
        server, listed(server, "/laughs.xml", "/xxe.xml"), **{"laughs.xml": LAUGHS, "xxe.xml": xxe}
    )
    result = await crawl(settings=ROBOTS, url=u("/"))
    manifest = result.manifest
    assert [p["url"] for p in manifest["pages"]][3:] == [u("/orphan1.html")]
    laughs, xxe_warning = manifest["warnings"]
    assert laughs.startswith(f"sitemap {u('/laughs.xml')}: malformed XML (")
    assert "amplification" in laughs
    # The external entity is never read: its <loc> is skipped, not cut short.
    assert xxe_warning == (
        f"sitemap {u('/xxe.xml')}: 1 entry(ies) without a plain-text location skipped"
    )


@pytest_twisted.ensureDeferred
async def test_a_sitemap_over_the_url_bound_is_read_up_to_it(server, crawl):
    u = server.url
    big = urlset(*(u(f"/p/{i}") for i in range(50_001)))
    shop(
        server,
        listed(server, "/big.xml", "/after.xml"),
        **{"big.xml": big, "after.xml": urlset(u("/x"))},
    )
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_PAGES": 5}, url=u("/"))
    manifest = result.manifest
    assert [p["url"] for p in manifest["pages"]][3:] == [u("/p/0"), u("/p/1")]
    # 50,000 read (and 2 links): 52,003 queued, 5 fetched; the next file is not
    # read, since no more of its URLs could be fetched under the page budget.
    assert manifest["warnings"] == [
        f"sitemap {u('/big.xml')}: more than 50000 URLs; the first 50000 read",
        "maxPages cap (5) reached; 49998 further URL(s) discovered but not fetched",
    ]
    assert result.stats["sitemap/urls"] == 50_000
    assert server.count("/after.xml") == 0


@pytest_twisted.ensureDeferred
async def test_a_sitemap_larger_than_download_maxsize_is_a_warning(server, crawl):
    u = server.url
    big = urlset(*(u(f"/p/{i}") for i in range(200)))
    shop(server, listed(server, "/big.xml"), **{"big.xml": big})
    result = await crawl(settings={**ROBOTS, "DOWNLOAD_MAXSIZE": 4000}, url=u("/"))
    assert len(result.manifest["pages"]) == 3
    (warning,) = result.manifest["warnings"]
    assert warning == f"sitemap {u('/big.xml')}: response from {u('/big.xml')} exceeds 4000 bytes"


@pytest_twisted.ensureDeferred
async def test_a_gzip_bomb_is_bounded_by_download_maxsize_once_inflated(server, crawl):
    u = server.url
    bomb = gzip.compress(urlset(*(u(f"/p/{i}") for i in range(2000))).encode())
    assert len(bomb) < 20_000  # small on the wire, over 60 KB inflated
    gz = Reply(body=bomb, content_type="application/octet-stream")
    shop(server, listed(server, "/bomb.xml.gz", "/ok.xml"), **{"bomb.xml.gz": gz})
    server.routes["/ok.xml"] = Reply(body=urlset(u("/orphan1.html")), content_type=XML)
    result = await crawl(settings={**ROBOTS, "DOWNLOAD_MAXSIZE": 20_000}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [u("/orphan1.html")]
    (warning,) = result.manifest["warnings"]
    assert warning.startswith(f"sitemap {u('/bomb.xml.gz')}: cannot decompress the gzip body (")
    assert "exceeded the specified maximum (20000 B)" in warning


@pytest_twisted.ensureDeferred
async def test_sitemaps_are_retried_and_wait_their_turn(server, crawl):
    u = server.url
    attempts: list[int] = []

    def flaky(_handler: object) -> Reply:
        attempts.append(1)
        if len(attempts) == 1:
            return Reply(503, "busy", content_type="text/plain")
        return Reply(body=urlset(u("/orphan1.html")), content_type=XML)

    shop(server, listed(server, "/sitemap.xml"))
    server.routes["/sitemap.xml"] = flaky
    delay = 0.15
    result = await crawl(
        settings={**ROBOTS, "TRAVERSE_MIN_DELAY": delay, "CONCURRENT_REQUESTS": 16}, url=u("/")
    )
    assert [p["url"] for p in result.manifest["pages"]][3:] == [u("/orphan1.html")]
    assert result.manifest["warnings"] == []
    assert server.count("/sitemap.xml") == 2
    # One origin, one request at a time, the delay from each end to the next start,
    # sitemaps included (robots.txt has a slot of its own); a retry waits its
    # backoff instead.
    hits = sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)
    assert len(hits) == 6  # 4 pages, 2 attempts at the sitemap
    for before, after in pairwise(hits):
        assert after.start >= before.end, (before.path, after.path)
        if (before.path, after.path) != ("/sitemap.xml", "/sitemap.xml"):
            assert after.start - before.end >= delay * 0.9, (before.path, after.path)


@pytest.mark.parametrize("seed_delay", [0.0, 0.8], ids=["seed-first", "sitemaps-first"])
@pytest_twisted.ensureDeferred
async def test_same_manifest_at_concurrency_1_and_16(server, crawl, tmp_path, seed_delay):
    random_delay_site(server, pages=30)
    u = server.url
    seed = server.routes["/p0.html"]
    assert isinstance(seed, Reply)
    seed.delay = seed_delay  # 0.8 s: at 16, the sitemaps are read before the seed returns
    # A slow index whose sitemaps list pages the links also reach, and orphans.
    server.routes["/robots.txt"] = Reply(
        body=listed(server, "/index.xml"), content_type="text/plain"
    )
    server.routes["/index.xml"] = Reply(
        body=index(u("/s1.xml"), u("/s2.xml")), delay=0.15, content_type=XML
    )
    server.routes["/s1.xml"] = Reply(body=urlset(u("/p9.html"), u("/o1.html")), content_type=XML)
    server.routes["/s2.xml"] = Reply(
        body=urlset(u("/o2.html"), u("/p1.html")), delay=0.1, content_type=XML
    )
    server.routes["/o1.html"] = Reply(body='<a href="/o3.html">o3</a>', delay=0.05)
    server.routes["/o2.html"] = Reply(body="<p>o2</p>")
    server.routes["/o3.html"] = Reply(body="<p>o3</p>")
    runs = []
    for concurrency in (1, 16, 16):
        result = await crawl(
            settings={
                "TRAVERSE_SITEMAPS": "auto",
                "TRAVERSE_MAX_PAGES": 20,
                "TRAVERSE_MAX_DEPTH": 3,
                "CONCURRENT_REQUESTS": concurrency,
                "TRAVERSE_MANIFEST_DIR": str(tmp_path / f"m{len(runs)}"),
            },
            url=u("/p0.html"),
        )
        runs.append(without_timestamps(result.manifest))
    depth1 = [p["url"] for p in runs[0]["pages"] if p["depth"] == 1]
    assert depth1[-2:] == [u("/o1.html"), u("/o2.html")]  # after the seed's links
    assert runs[0]["truncated"] is True
    assert runs[1] == runs[0]
    assert runs[2] == runs[0]
    last = {h.path: h for h in server.hits}  # the last run's hit of each path (at 16)
    sitemaps_done = last["/s2.xml"].end < last["/p0.html"].end
    assert sitemaps_done is (seed_delay > 0)  # both interleavings were exercised


@pytest_twisted.ensureDeferred
async def test_capture_then_replay_with_the_server_stopped(server, crawl, tmp_path):
    u = server.url
    shop(
        server,
        listed(server, "/index.xml"),
        **{
            "index.xml": index(u("/s1.xml.gz")),
            "s1.xml.gz": Reply(
                body=gzip.compress(urlset(u("/orphan2.html"), u("/orphan1.html")).encode()),
                content_type="application/x-gzip",
            ),
        },
    )
    settings = {"TRAVERSE_SITEMAPS": "auto"}
    capture = await crawl(settings=settings, url=u("/"), source_id="shop")
    captured = capture.manifest
    assert [p["url"] for p in captured["pages"]][3:5] == [u("/orphan2.html"), u("/orphan1.html")]
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    for url in (u("/robots.txt"), u("/index.xml"), u("/s1.xml.gz")):
        assert store.latest(sitemap_id("shop", url)) is not None, url
    assert capture.stats["sitemap/stored"] == 3

    server.shutdown()
    server.server_close()
    replay = await crawl(
        settings={**settings, "TRAVERSE_MODE": "replay"}, url=u("/"), source_id="shop"
    )
    replayed = replay.manifest
    assert urls_and_depths(replayed) == urls_and_depths(captured)
    assert [p["sourceRef"] for p in replayed["pages"]] == [
        p["sourceRef"] for p in captured["pages"]
    ]
    assert replayed["warnings"] == captured["warnings"] == []
    assert replay.stats["sitemap/fetched"] == 2
    assert "replay/miss" not in replay.stats
