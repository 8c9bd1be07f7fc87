"""Pure tables: WHATWG normalisation, page ids, link discovery."""

from __future__ import annotations

import pytest

from traverse_crawl.crawl.links import discover_links
from traverse_crawl.fetch import urls

BASE = "https://example.test/dir/home.html"
ORIGIN = "https://example.test"


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("about.html", "https://example.test/dir/about.html"),
        (" about.html ", "https://example.test/dir/about.html"),
        ("ab\tout.html", "https://example.test/dir/about.html"),
        ("?", "https://example.test/dir/home.html?"),
        ("", None),
        ("   ", "https://example.test/dir/home.html"),
        ("#top", "https://example.test/dir/home.html"),
        ("home.html#x", "https://example.test/dir/home.html"),
        ("café.html", "https://example.test/dir/caf%C3%A9.html"),
        ("a b.html", "https://example.test/dir/a%20b.html"),
        ("HTTPS://EXAMPLE.TEST/Z", "https://example.test/Z"),
        ("https://example.test:443/p", "https://example.test/p"),
        ("../x/./y/../z", "https://example.test/x/z"),
        ("?b=2&a=1", "https://example.test/dir/home.html?b=2&a=1"),
        ("%7E/~", "https://example.test/dir/%7E/~"),
        ("//other.test/x", None),
        ("http://example.test/x", None),
        ("https://example.test:8443/x", None),
        ("mailto:someone@example.test", None),
        ("javascript:void(0)", None),
        ("data:text/html,hi", None),
        ("ftp://example.test/x", None),
        ("http://exa mple.test/", None),
        ("http://[::1", None),
    ],
)
def test_link_resolution(href, expected):
    found = discover_links(f'<a href="{href}">x</a>', BASE, ORIGIN)
    assert found == ([expected] if expected else [])


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ('<A HREF="a.html">x</A><a Href="b.html">y</a>', ["a.html", "b.html"]),
        (
            '<a href="a.html">1</a><a href="b.html">2</a><a href="a.html#z">3</a>',
            ["a.html", "b.html"],
        ),
        ('<svg><a href="svg.html">s</a></svg>', ["svg.html"]),
        ('<noscript><a href="ns.html">n</a></noscript>', ["ns.html"]),
        ('<!-- <a href="c.html">c</a> --><a href="d.html">d</a>', ["d.html"]),
        ("<script>var s = \"<a href='s.html'>\";</script>", []),
        ('<template><a href="t.html">t</a></template><a href="u.html">u</a>', ["u.html"]),
        ('<a href="x.html?a=1&amp;b=2">e</a>', ["x.html?a=1&b=2"]),
        ('<a href="first.html" href="second.html">d</a>', ["first.html"]),
        ("<area href='area.html'><link href='l.html'><img src='i.png'>", []),
        ('<base href="https://example.test/other/"><a href="b.html">b</a>', ["../other/b.html"]),
        ("", []),
        ("\x00\x01\x02 binary <a href='z.html'>", ["z.html"]),
    ],
)
def test_anchor_discovery(html, expected):
    found = discover_links(html, BASE, ORIGIN)
    assert found == [urls.normalize(e, BASE) for e in expected]


@pytest.mark.parametrize(
    ("seed_id", "url", "page_id"),
    [
        ("crawl-1", "https://example.test/crawl-site/home.html",
         "crawl-1::https://example.test/crawl-site/home.html"),
        ("a::b", "c", "a%3A%3Ab::c"),
        ("a", "b::c", "a::b::c"),
        ("50%", "u", "50%25::u"),
        ("sp ace/slash?q&", "u", "sp%20ace%2Fslash%3Fq%26::u"),
        ("keep-_.!~*'()", "u", "keep-_.!~*'()::u"),
        ("", "u", "::u"),
    ],
)  # fmt: skip
def test_page_ids(seed_id, url, page_id):
    assert urls.page_id(seed_id, url) == page_id


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("http://EXAMPLE.test:80/a", "http://example.test"),
        ("https://h:8443/", "https://h:8443"),
        ("ftp://h/", ""),
        ("nonsense", ""),
    ],
)
def test_origins(url, origin):
    assert urls.origin(url) == origin


def test_userinfo_links_are_same_origin():
    found = discover_links('<a href="https://user:pw@example.test/x#f">x</a>', BASE, ORIGIN)
    assert found == ["https://user:pw@example.test/x"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.test/a", True),
        ("https://example.test", False),
        ("https://example.test.evil/a", False),
        ("https://example.test:8443/a", False),
        ("http://example.test/a", False),
        ("https://u:p@example.test/a", True),
        ("https://example.test@evil.test/a", False),
    ],
)
def test_same_origin(url, expected):
    assert urls.same_origin(url, ORIGIN) is expected
