"""The links of malformed and truncated pages (crawl/links.py, crawl/html.py).

What libxml2's HTML parser makes of them, pinned, and read the same three ways: the
tree walk, the stream in one piece, and the stream in pieces of a few characters that
cut every tag and attribute. A tag the end of the page cuts is not read (as in HTML's
tokenizer: end of file inside a tag drops it), so a torn ``href`` is never followed.
"""

from __future__ import annotations

import pytest

import traverse_crawl.crawl.html as html_module
import traverse_crawl.crawl.links as links_module
from traverse_crawl.crawl.html import MAX_DEPTH
from traverse_crawl.crawl.links import find_links

pytestmark = pytest.mark.parsing

ORIGIN = "http://a.test"
READINGS = {"tree": (1 << 60, 1 << 20), "stream": (0, 1 << 20), "stream in pieces": (0, 7)}


def links(body: str, reading: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    threshold, feed = READINGS[reading]
    monkeypatch.setattr(links_module, "STREAM_CHARS", threshold)
    monkeypatch.setattr(html_module, "_FEED_CHARS", feed)
    found, warnings = find_links(body, ORIGIN + "/d/p", ORIGIN)
    assert warnings == []
    return [url.removeprefix(ORIGIN) for url in found]


@pytest.mark.parametrize("reading", READINGS)
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # The page ends inside a tag: the cut tag is not read.
        ('<p><a href="/a">A</a><a href="/b', ["/a"]),
        ('<p><a href="/a">A</a><a href="/b"', ["/a"]),
        ('<p><a href="/a">A</a><a href=/b', ["/a"]),
        ('<p><a href="/a">A</a><a hr', ["/a"]),
        ('<p><a href="/a">A</a><a', ["/a"]),
        ('<p><a href="/a">A</a><', ["/a"]),
        ('<p><a href="/a">A</a><a href="/b">B</a><a class="x" href="/c', ["/a", "/b"]),
        ('<base href="/dir/"><a href="x">X</a><base href="/other/', ["/dir/x"]),
        # ... or inside a comment, a script, a template: nothing after it is a link.
        ('<a href="/a">A</a><!-- <a href="/b">B</a>', ["/a"]),
        ('<a href="/a">A</a><script>var x = "<a href=/s>";', ["/a"]),
        ('<a href="/a">A</a><template><a href="/t">', ["/a"]),
        # Elements left open at the end of the page: every link in them is read.
        ('<div><ul><li><a href="/a">A<li><a href="/b">B<table><tr><td><a href="/c">',
         ["/a", "/b", "/c"]),
        ('<a href="/a"><a href="/b"><div><a href="/c">', ["/a", "/b", "/c"]),
        # Errors in the middle of the page: the parser goes on, and so do the links.
        ('<a href="/a">A</a></div></span><a href="/b">B</a><<>><a href="/c">C</a>&#xZZ;'
         '<a href="/d">', ["/a", "/b", "/c", "/d"]),
        ('<a href="/a" href="/dup">A</a><a href="/b" "junk"=1 =x>B</a><a href=\'/c\'>',
         ["/a", "/b", "/c"]),
        # A quote never closed runs to the next quote, as a browser reads it.
        ('<a href="/a">A</a><a href="/b>B</a><a href="/c">C</a>',
         ["/a", "/b%3EB%3C/a%3E%3Ca%20href="]),
        # What follows </html> is read as the tree reads it (crawl/html.py).
        ('<a href="/a"></html><a href="/b">', ["/a"]),
        ('<template></template><a href="/a"></html><a href="/b', ["/a"]),
    ],
)  # fmt: skip
def test_malformed_pages_links(monkeypatch, reading, body, expected):
    assert links(body, reading, monkeypatch) == expected


@pytest.mark.parametrize("reading", READINGS)
def test_a_page_cut_after_nesting_past_the_bound(monkeypatch, reading):
    """libxml2 stops at the bound: what lxml reports after it (an end for every open
    element, since lxml 6.2) changes nothing of the links read before it."""
    body = '<a href="/first">' + "<div>" * (MAX_DEPTH + 10) + '<a href="/deep"><a href="/cut'
    monkeypatch.setattr(links_module, "STREAM_CHARS", READINGS[reading][0])
    monkeypatch.setattr(html_module, "_FEED_CHARS", READINGS[reading][1])
    found, warnings = find_links(body, ORIGIN + "/", ORIGIN)
    assert found == [ORIGIN + "/first"]
    assert len(warnings) == 1 and warnings[0].startswith(f"markup nested deeper than {MAX_DEPTH}")


def test_a_large_page_cut_inside_a_tag_is_streamed_without_the_torn_link(monkeypatch):
    monkeypatch.setattr(html_module, "_FEED_CHARS", 1 << 16)
    body = "".join(f'<p><a href="/p{i}">{i}</a></p>\n' for i in range(200_000))
    cut = body[: body.rindex('">')]  # inside the last href
    assert len(cut) >= links_module.STREAM_CHARS
    found, _ = find_links(cut, ORIGIN + "/", ORIGIN)
    assert len(found) == 199_999
    assert found[-1] == ORIGIN + "/p199998"
