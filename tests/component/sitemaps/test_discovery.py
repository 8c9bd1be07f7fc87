"""Sitemap discovery against real loopback sites: discovery, formats, order."""

from __future__ import annotations

import gzip

import pytest_twisted

from tests.support.server import Reply
from tests.support.sitemapsite import index, listed, shop, urls_and_depths, urlset

ROBOTS = {"TRAVERSE_SITEMAPS": "robots"}
AUTO = {"TRAVERSE_SITEMAPS": "auto"}


@pytest_twisted.ensureDeferred
async def test_orphans_are_crawled_after_the_seed_links_in_sitemap_order(server, crawl):
    u = server.url
    sitemap = urlset(u("/orphan2.html"), u("/a.html"), u("/orphan1.html"), u("/orphan3.html"))
    shop(server, listed(server, "/sitemap.xml"), **{"sitemap.xml": sitemap})
    result = await crawl(settings=ROBOTS, url=u("/"))
    manifest = result.manifest
    assert urls_and_depths(manifest) == [
        (u("/"), 0),
        (u("/a.html"), 1),
        (u("/b.html"), 1),
        (u("/orphan2.html"), 1),  # sitemap order; a.html was already queued as a link
        (u("/orphan1.html"), 1),
        (u("/orphan3.html"), 1),
        (u("/a2.html"), 2),
        (u("/deep.html"), 2),
    ]
    assert manifest["warnings"] == [] and manifest["truncated"] is False
    assert result.stats["sitemap/fetched"] == 1
    assert result.stats["sitemap/urls"] == 4
    assert server.count("/robots.txt") == 1  # the robots middleware's one fetch
    assert server.count("/sitemap.xml") == 1
    # A sitemap is not a page: not in the manifest, not in the feed.
    assert len(result.items) == len(manifest["pages"])


@pytest_twisted.ensureDeferred
async def test_off_is_the_default_and_reads_no_sitemap(server, crawl):
    shop(
        server,
        listed(server, "/sitemap.xml"),
        **{"sitemap.xml": urlset(server.url("/orphan1.html"))},
    )
    result = await crawl(url=server.url("/"))
    assert [p["url"] for p in result.manifest["pages"]] == [
        server.url(p) for p in ("/", "/a.html", "/b.html", "/a2.html")
    ]
    assert server.count("/sitemap.xml") == 0
    assert not any(k.startswith("sitemap/") for k in result.stats)


@pytest_twisted.ensureDeferred
async def test_robots_lines_are_read_in_order_and_auto_falls_back_to_sitemap_xml(
    server, crawl, tmp_path
):
    u = server.url
    shop(
        server,
        listed(server, "/maps/two.xml", "/maps/one.xml"),
        **{
            "maps/one.xml": urlset(u("/orphan1.html")),
            "maps/two.xml": urlset(u("/orphan2.html")),
            "sitemap.xml": urlset(u("/orphan3.html")),
        },
    )
    depth1 = {"TRAVERSE_MAX_DEPTH": 1}
    for mode in ("robots", "auto"):  # robots.txt names sitemaps: /sitemap.xml is not read
        result = await crawl(settings={**depth1, "TRAVERSE_SITEMAPS": mode}, url=u("/"))
        assert [p["url"] for p in result.manifest["pages"]][3:] == [
            u("/orphan2.html"),
            u("/orphan1.html"),
        ]
    assert server.count("/sitemap.xml") == 0

    server.routes["/robots.txt"] = Reply(
        body="User-agent: *\nAllow: /\n", content_type="text/plain"
    )
    robots_only = await crawl(settings={**depth1, **ROBOTS}, url=u("/"))
    assert len(robots_only.manifest["pages"]) == 3
    assert server.count("/sitemap.xml") == 0
    auto = await crawl(settings={**depth1, **AUTO}, url=u("/"))
    assert [p["url"] for p in auto.manifest["pages"]][3:] == [u("/orphan3.html")]
    assert server.count("/sitemap.xml") == 1


@pytest_twisted.ensureDeferred
async def test_auto_without_any_sitemap_is_silent(server, crawl):
    shop(server)  # robots.txt empty, /sitemap.xml a 404
    result = await crawl(settings=AUTO, url=server.url("/"))
    assert len(result.manifest["pages"]) == 4
    assert result.manifest["warnings"] == []
    assert server.count("/sitemap.xml") == 1
    assert "sitemap/error" not in result.stats


@pytest_twisted.ensureDeferred
async def test_robots_txt_is_fetched_for_sitemaps_when_not_obeyed(server, crawl):
    u = server.url
    robots = f"User-agent: *\nDisallow: /\nSitemap: {u('/sitemap.xml')}\n"
    shop(server, robots, **{"sitemap.xml": urlset(u("/orphan1.html"))})
    result = await crawl(settings={**ROBOTS, "ROBOTSTXT_OBEY": False}, url=u("/"))
    assert u("/orphan1.html") in [p["url"] for p in result.manifest["pages"]]
    assert all("snapshot" in p["fetch"] for p in result.manifest["pages"])  # nothing denied
    assert server.count("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_gzipped_sitemap_served_as_octet_stream(server, crawl):
    u = server.url
    body = gzip.compress(urlset(u("/orphan3.html"), u("/orphan1.html")).encode())
    gz = Reply(body=body, content_type="application/octet-stream")
    shop(server, listed(server, "/sitemap.xml.gz"), **{"sitemap.xml.gz": gz})
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [
        u("/orphan3.html"),
        u("/orphan1.html"),
    ]
    assert result.manifest["warnings"] == []


@pytest_twisted.ensureDeferred
async def test_xml_served_as_html_plain_text_and_rss_sitemaps(server, crawl):
    u = server.url
    html = Reply(body=urlset(u("/orphan1.html")), content_type="text/html; charset=utf-8")
    text = Reply(body=f"{u('/orphan2.html')}\r\n\r\n{u('/b.html')}\n", content_type="text/plain")
    item = f"<item><link>{u('/orphan3.html')}</link></item>"
    rss = f"<rss version='2.0'><channel>{item}</channel></rss>"
    shop(
        server,
        listed(server, "/html.xml", "/list.txt", "/feed.rss"),
        **{"html.xml": html, "list.txt": text, "feed.rss": rss},
    )
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [
        u("/orphan1.html"),
        u("/orphan2.html"),
        u("/orphan3.html"),
    ]
    assert result.manifest["warnings"] == []
    assert result.stats["sitemap/fetched"] == 3


@pytest_twisted.ensureDeferred
async def test_sitemap_index_of_two_sitemaps_in_index_order(server, crawl):
    u = server.url
    shop(
        server,
        listed(server, "/index.xml", "/last.xml"),
        **{
            "index.xml": index(u("/s2.xml"), "/s1.xml"),  # a relative <loc> is resolved
            "s1.xml": urlset(u("/orphan1.html")),
            "s2.xml": urlset(u("/orphan2.html"), u("/orphan1.html")),
            "last.xml": urlset(u("/orphan3.html")),
        },
    )
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [
        u("/orphan2.html"),
        u("/orphan1.html"),
        u("/orphan3.html"),
    ]
    assert result.stats["sitemap/fetched"] == 4
    assert [server.count(p) for p in ("/index.xml", "/s1.xml", "/s2.xml", "/last.xml")] == [1] * 4


@pytest_twisted.ensureDeferred
async def test_index_that_lists_itself_is_read_once(server, crawl):
    u = server.url
    shop(
        server,
        listed(server, "/index.xml"),
        **{
            "index.xml": index(u("/index.xml"), u("/s1.xml"), u("/index.xml#again")),
            "s1.xml": index(u("/index.xml"), u("/s2.xml")),
            "s2.xml": urlset(u("/orphan1.html")),
        },
    )
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [u("/orphan1.html")]
    assert [server.count(p) for p in ("/index.xml", "/s1.xml", "/s2.xml")] == [1, 1, 1]
    assert result.manifest["warnings"] == []


@pytest_twisted.ensureDeferred
async def test_indexes_nest_at_most_three_deep(server, crawl):
    u = server.url
    shop(
        server,
        listed(server, "/i1.xml"),
        **{
            "i1.xml": index(u("/i2.xml")),
            "i2.xml": index(u("/i3.xml"), u("/s2.xml")),
            "i3.xml": index(u("/s4.xml")),
            "s2.xml": urlset(u("/orphan2.html")),
            "s4.xml": urlset(u("/orphan1.html")),
        },
    )
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    assert [p["url"] for p in result.manifest["pages"]][3:] == [u("/orphan2.html")]
    assert result.manifest["warnings"] == [
        f"sitemap {u('/i3.xml')}: sitemap index nested more than 3 deep; its 1 sitemap(s) not read"
    ]
    assert server.count("/s4.xml") == 0


@pytest_twisted.ensureDeferred
async def test_off_origin_sitemap_urls_are_ignored(server, server2, crawl):
    u = server.url
    # A sitemap on another origin may be read (robots.txt may point anywhere) ...
    server2.routes["/cdn-map.xml"] = Reply(
        body=urlset(server2.url("/elsewhere.html"), u("/orphan2.html")), content_type="text/xml"
    )
    sitemap = urlset(
        "https://127.0.0.1/orphan1.html",  # another scheme, hence origin
        server2.url("/orphan1.html"),
        "mailto:someone@example.test",
        u("/orphan1.html#section"),
    )
    robots = listed(server, "/sitemap.xml") + f"Sitemap: {server2.url('/cdn-map.xml')}\n"
    shop(server, robots, **{"sitemap.xml": sitemap})
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, url=u("/"))
    # ... but only URLs on the seed's origin enter its frontier, fragment-less.
    assert [p["url"] for p in result.manifest["pages"]][3:] == [
        u("/orphan1.html"),
        u("/orphan2.html"),
    ]
    assert server2.count("/elsewhere.html") == 0 and server2.count("/orphan1.html") == 0
    assert result.stats["sitemap/urls"] == 2


@pytest_twisted.ensureDeferred
async def test_sitemap_urls_count_against_max_pages_and_depth_zero_reads_none(server, crawl):
    u = server.url
    sitemap = urlset(*(u(f"/orphan{i}.html") for i in (1, 2, 3)))
    shop(server, listed(server, "/sitemap.xml"), **{"sitemap.xml": sitemap})
    capped = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_PAGES": 4}, url=u("/"))
    assert [p["url"] for p in capped.manifest["pages"]] == [
        u("/"),
        u("/a.html"),
        u("/b.html"),
        u("/orphan1.html"),
    ]
    assert capped.manifest["truncated"] is True
    assert capped.manifest["warnings"] == [
        "maxPages cap (4) reached; 4 further URL(s) discovered but not fetched"
    ]
    assert server.count("/orphan2.html") == 0

    flat = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 0}, url=u("/"))
    assert [p["url"] for p in flat.manifest["pages"]] == [u("/")]
    assert flat.manifest["truncated"] is False
    assert server.count("/sitemap.xml") == 1  # only by the first crawl


@pytest_twisted.ensureDeferred
async def test_two_seeds_of_one_origin_each_read_the_sitemaps_robots_txt_once(
    server, crawl, tmp_path
):
    u = server.url
    shop(server, listed(server, "/sitemap.xml"), **{"sitemap.xml": urlset(u("/orphan1.html"))})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"home\t{u('/')}\nb\t{u('/b.html')}\n", encoding="utf-8")
    result = await crawl(settings={**ROBOTS, "TRAVERSE_MAX_DEPTH": 1}, seeds=str(seeds))
    by_id = {m["seed"]["id"]: [p["url"] for p in m["pages"]] for m in result.manifests()}
    assert by_id == {
        "home": [u("/"), u("/a.html"), u("/b.html"), u("/orphan1.html")],
        "b": [u("/b.html"), u("/orphan1.html")],
    }
    assert server.count("/robots.txt") == 1  # one load, shared by both seeds' discovery
    assert server.count("/sitemap.xml") == 2  # each seed reads its own, as it fetches its pages
