"""Pure tests of sitemap reading (sitemaps/parse.py) and the walk (sitemaps/walk.py)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from traverse_crawl.sitemaps.parse import (
    MAX_URLS,
    SitemapDocument,
    parse_sitemap,
    sitemaps_in_robots,
)
from traverse_crawl.sitemaps.walk import Fetch, SitemapWalk

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@pytest.mark.parsing
@pytest.mark.parametrize(
    ("text", "kind", "locations", "problems"),
    [
        (f"<urlset {NS}><url><loc> http://x/a </loc></url><url><loc>/b</loc></url></urlset>",
         "urlset", ("http://x/a", "/b"), ()),
        (f"<sitemapindex {NS}><sitemap><loc>http://x/s1.xml</loc><lastmod>2024</lastmod>"
         "</sitemap></sitemapindex>", "index", ("http://x/s1.xml",), ()),
        ('\ufeff<?xml version="1.0" encoding="ISO-8859-1"?>\n<urlset><url><loc>http://x/é</loc>'
         "</url></urlset>", "urlset", ("http://x/é",), ()),
        ("<urlset><url><loc>http://x/?a=1&amp;b=2&#38;c</loc></url></urlset>",
         "urlset", ("http://x/?a=1&b=2&c",), ()),
        # Scrapy's recover mode reads ``?a=1=2`` here; strict mode reads nothing wrong.
        ("<urlset><url><loc>http://x/ok</loc></url><url><loc>http://x/?a=1&b=2</loc></url>"
         "</urlset>", "urlset", ("http://x/ok",), ("malformed XML (EntityRef: expecting ';', "
                                                   "line 1, column 67)",)),
        # Truncated: the entry whose </url> never came is not read in part.
        ("<urlset><url><loc>http://x/a</loc></url><url><loc>http://x/produ", "urlset",
         ("http://x/a",), ("malformed XML (Premature end of data in tag loc line 1, line 1, "
                           "column 65)",)),
        ("<urlset><url><lastmod>2024</lastmod></url><url><loc><b>x</b></loc></url></urlset>",
         "urlset", (), ("2 entry(ies) without a plain-text location skipped",)),
        ("<rss version='2.0'><channel><item><title>t</title><link>http://x/r</link></item>"
         "</channel></rss>", "urlset", ("http://x/r",), ()),
        ('<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="http://x/e"/></entry>'
         "</feed>", "urlset", ("http://x/e",), ()),
        ("<!DOCTYPE html><html><body>Not found</body></html>", "urlset", (),
         ("not a sitemap (root element <html>)",)),
        ("http://x/1\r\n\r\n  http://x/2  \nsee also my blog\n", "text",
         ("http://x/1", "http://x/2"), ("1 line(s) that are not URLs ignored",)),
        ("", "text", (), ()),
    ],
)  # fmt: skip
def test_parse_sitemap(text, kind, locations, problems):
    assert parse_sitemap(text) == SitemapDocument(kind, locations, problems)


@pytest.mark.parsing
def test_entities_are_never_expanded():
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
        + "".join(f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in pairwise("abcdefghi"))
        + "]><urlset><url><loc>http://x/&i;</loc></url></urlset>"
    )
    document = parse_sitemap(laughs)
    assert document.locations == ()
    assert document.problems[0].startswith("malformed XML (Maximum entity amplification")
    external = (
        '<!DOCTYPE u [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        "<urlset><url><loc>http://x/&e;</loc></url></urlset>"
    )
    assert parse_sitemap(external) == SitemapDocument(
        "urlset", (), ("1 entry(ies) without a plain-text location skipped",)
    )


@pytest.mark.parsing
def test_url_bound_per_file():
    entries = "".join(f"<url><loc>http://x/{i}</loc></url>" for i in range(MAX_URLS + 5))
    document = parse_sitemap(f"<urlset>{entries}</urlset>")
    assert len(document.locations) == MAX_URLS
    assert document.locations[-1] == f"http://x/{MAX_URLS - 1}"
    assert document.problems == (f"more than {MAX_URLS} URLs; the first {MAX_URLS} read",)
    text = parse_sitemap("\n".join(f"http://x/{i}" for i in range(MAX_URLS + 1)))
    assert len(text.locations) == MAX_URLS and len(text.problems) == 1


def test_sitemaps_in_robots():
    robots = (
        "User-agent: *\nDisallow: /x\nSITEMAP: /a.xml # comment\n"
        "sitemap:https://o.test/b.xml\n  Sitemap :  c.xml\nSitemap:\nAllow: /sitemap: no\n"
    )
    assert sitemaps_in_robots(robots) == ["/a.xml", "https://o.test/b.xml", "c.xml"]


ORIGIN = "https://h.test"


def urlset(*locations: str) -> SitemapDocument:
    return SitemapDocument("urlset", locations)


def sitemap_index(*locations: str) -> SitemapDocument:
    return SitemapDocument("index", locations)


def step(walk: SitemapWalk) -> Fetch:
    fetch = walk.next_fetch()
    assert fetch is not None
    walk.start(fetch)
    return fetch


def test_walk_reads_robots_then_each_sitemap_depth_first_in_order():
    walk = SitemapWalk(ORIGIN, "robots", limit=100)
    assert step(walk) == Fetch(ORIGIN + "/robots.txt", "robots")
    assert walk.next_fetch() is None and not walk.done  # one file at a time
    walk.robots_read("Sitemap: /index.xml\nSitemap: /last.xml\nSitemap: /index.xml#dup\n")
    assert step(walk) == Fetch(ORIGIN + "/index.xml", "sitemap", 1)
    walk.sitemap_read(sitemap_index("/s1.xml", "/index.xml", "s2.xml"))
    assert step(walk).url == ORIGIN + "/s1.xml"
    assert walk.sitemap_read(urlset("/p/1", "https://other.test/p", "/p/2#x", "mailto:a@b")) == 2
    assert step(walk) == Fetch(ORIGIN + "/s2.xml", "sitemap", 2)
    walk.sitemap_failed("HTTP 500")
    assert step(walk).url == ORIGIN + "/last.xml"
    walk.sitemap_read(urlset("/p/2", "/p/3"), final_url=ORIGIN + "/moved/last.xml")
    assert walk.done
    assert walk.urls == [ORIGIN + "/p/1", ORIGIN + "/p/2", ORIGIN + "/p/3"]
    assert walk.warnings == [f"sitemap {ORIGIN}/s2.xml: HTTP 500"]


def test_auto_falls_back_to_sitemap_xml_whose_absence_is_silent():
    walk = SitemapWalk(ORIGIN, "auto", limit=100)
    step(walk)
    walk.robots_read(None)
    assert step(walk) == Fetch(ORIGIN + "/sitemap.xml", "sitemap", 1, fallback=True)
    walk.sitemap_failed("HTTP 404", not_found=True)
    assert walk.done and walk.urls == [] and walk.warnings == []

    robots_mode = SitemapWalk(ORIGIN, "robots", limit=100)
    step(robots_mode)
    robots_mode.robots_read("User-agent: *\n")
    assert robots_mode.done


def test_named_sitemap_not_found_is_a_warning():
    walk = SitemapWalk(ORIGIN, "auto", limit=100)
    step(walk)
    walk.robots_read(f"Sitemap: {ORIGIN}/sitemap.xml")
    step(walk)
    walk.sitemap_failed("HTTP 404", not_found=True)
    assert walk.warnings == [f"sitemap {ORIGIN}/sitemap.xml: HTTP 404"]


def test_nesting_bound_and_self_reference():
    walk = SitemapWalk(ORIGIN, "robots", limit=100)
    step(walk)
    walk.robots_read("Sitemap: /1.xml")
    for level in (1, 2, 3):
        fetch = step(walk)
        assert fetch.level == level
        walk.sitemap_read(sitemap_index(f"/{level + 1}.xml", "/1.xml"))
    assert walk.done
    assert walk.warnings == [
        f"sitemap {ORIGIN}/3.xml: sitemap index nested more than 3 deep; its 1 sitemap(s) not read"
    ]


def test_reading_stops_between_files_once_the_budget_is_covered():
    walk = SitemapWalk(ORIGIN, "robots", limit=3)
    step(walk)
    walk.robots_read("Sitemap: /a.xml\nSitemap: /b.xml\nSitemap: /c.xml")
    step(walk)
    walk.sitemap_read(urlset("/1", "/2"))
    step(walk)
    walk.sitemap_read(urlset("/2", "/3", "/4"))  # a file is read whole
    assert walk.done
    assert walk.urls == [ORIGIN + "/1", ORIGIN + "/2", ORIGIN + "/3", ORIGIN + "/4"]


@pytest.mark.parametrize(("limit", "bound"), [(1, 10), (2, 20)])
def test_a_seed_reads_at_most_ten_sitemap_files_per_page_and_says_so_once(limit, bound):
    walk = SitemapWalk(ORIGIN, "robots", limit=limit)
    step(walk)
    walk.robots_read("Sitemap: /index.xml")
    step(walk)
    walk.sitemap_read(sitemap_index(*(f"/empty-{n}.xml" for n in range(3 * bound))))
    while (fetch := walk.next_fetch()) is not None:
        walk.start(fetch)
        walk.sitemap_read(urlset("https://other.test/p"))  # nothing on the seed's origin
    assert walk.done
    assert walk.files == bound
    assert walk.warnings == [
        f"sitemap file limit ({bound}) reached; further sitemap files not read"
    ]


def test_the_sitemap_file_bound_follows_the_page_budget():
    assert [SitemapWalk(ORIGIN, "robots", limit=n).max_files for n in (0, 1, 5, 20)] == [
        10,
        10,
        50,
        200,
    ]


def test_document_problems_become_warnings_on_the_requested_url():
    walk = SitemapWalk(ORIGIN, "robots", limit=100)
    step(walk)
    walk.robots_read("Sitemap: /a.xml")
    step(walk)
    walk.note("store.put failed (disk full); read, but not kept for replay")
    walk.sitemap_read(SitemapDocument("urlset", ("/1",), ("malformed XML (x)",)), ORIGIN + "/b")
    assert walk.warnings == [
        f"sitemap {ORIGIN}/a.xml: store.put failed (disk full); read, but not kept for replay",
        f"sitemap {ORIGIN}/a.xml: malformed XML (x)",
    ]
    assert walk.urls == [ORIGIN + "/1"]


def test_give_up_on_the_file_in_flight():
    walk = SitemapWalk(ORIGIN, "auto", limit=100)
    step(walk)
    walk.give_up("unexpected error while reading it: boom")  # robots.txt: as if absent
    step(walk)
    walk.give_up("unexpected error while reading it: boom")
    assert walk.done
    # Only the fallback's absence is silent; robots.txt never warns here.
    assert walk.warnings == [
        f"sitemap {ORIGIN}/sitemap.xml: unexpected error while reading it: boom"
    ]
    walk.give_up("nothing in flight")
    assert len(walk.warnings) == 1
