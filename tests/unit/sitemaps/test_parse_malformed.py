"""Malformed and truncated sitemaps (sitemaps/parse.py): the entries whose end tag came
before the first syntax error are read, the one the error cut is not read in part,
whatever lxml reports after the error."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from lxml import etree

from traverse_crawl.sitemaps import parse
from traverse_crawl.sitemaps.parse import SitemapDocument, parse_sitemap

pytestmark = pytest.mark.parsing

PULL_PARSER = etree.XMLPullParser


class SynthesizingParser:
    """lxml's pull parser, reporting after any error, on ``feed()`` as on ``close()``,
    an end for every element still open (as lxml 6.2's ``close()`` does): the most a
    parser call that meets an error can report."""

    def __init__(self, **options: Any) -> None:
        self._parser = PULL_PARSER(**options)
        self._open: list[Any] = []
        self._events: list[tuple[str, Any]] = []

    @property
    def feed_error_log(self) -> Any:
        return self._parser.feed_error_log

    def feed(self, data: str) -> None:
        self._call(self._parser.feed, data)

    def close(self) -> None:
        self._call(self._parser.close)

    def read_events(self) -> Iterator[tuple[str, Any]]:
        events, self._events = self._events, []
        return iter(events)

    def _call(self, method: Any, *args: Any) -> None:
        try:
            method(*args)
        except etree.XMLSyntaxError:
            self._collect(synthesize=True)
            raise
        self._collect(synthesize=bool(self._parser.feed_error_log.filter_from_fatals()))

    def _collect(self, synthesize: bool) -> None:
        for event, element in self._parser.read_events():
            if event == "start":
                self._open.append(element)
            else:
                self._open.pop()
            self._events.append((event, element))
        if synthesize:
            self._events += [("end", element) for element in reversed(self._open)]
            self._open.clear()


@pytest.fixture(params=["lxml", "synthesizing"])
def parser_kind(request, monkeypatch):
    if request.param == "synthesizing":
        monkeypatch.setattr(etree, "XMLPullParser", SynthesizingParser)
    return request.param


@pytest.mark.parametrize(
    ("text", "kind", "locations"),
    [
        # Truncated inside a text, a tag, an attribute; right after an end tag.
        ("<urlset><url><loc>http://x/a</loc></url><url><loc>http://x/produ", "urlset",
         ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url>", "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url>\n", "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><url><loc>http://x/b</loc>", "urlset",
         ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><url><loc>http://x/b</loc></ur", "urlset",
         ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><url><loc a='x", "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><url><lo", "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><", "urlset", ("http://x/a",)),
        ("<urlset>", "urlset", ()),
        ("<urlse", "urlset", ()),
        # An error in the middle of the file, right after a closed entry or inside one.
        ("<urlset><url><loc>http://x/a</loc></url><<url><loc>http://x/b</loc></url></urlset>",
         "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url><url><loc>http://x/b</loc></urlx></urlset>",
         "urlset", ("http://x/a",)),
        ("<urlset><url><loc>http://x/a</loc></url></urlset><x/>", "urlset", ("http://x/a",)),
        # An undefined entity stops libxml2 without an exception from feed().
        ("<urlset><url>&u;</url><url><loc>http://x/a</loc></url></urlset>", "urlset", ()),
        ("<urlset><url><loc>http://x/0</loc></url><url><loc>http://x/&u;</loc></url>"
         "<url><loc>http://x/b</loc></url></urlset>", "urlset", ("http://x/0",)),
        # The other formats: the entry is </item>, </entry>, </sitemap>.
        ("<rss><channel><item><link>http://x/r</link></item><item><link>http://x/s</link>",
         "urlset", ("http://x/r",)),
        ('<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="http://x/e"/></entry>'
         '<entry><link href="http://x/f"/>', "urlset", ("http://x/e",)),
        ("<sitemapindex><sitemap><loc>http://x/1.xml</loc></sitemap><sitemap>"
         "<loc>http://x/2.xml</loc>", "index", ("http://x/1.xml",)),
        ('<?xml version="1.0" encoding="ISO-8859-1"?>\n<urlset><url><loc>http://x/é</loc></url>'
         "<url><loc>http://x/ü&x</loc></url></urlset>", "urlset", ("http://x/é",)),
    ],
)  # fmt: skip
def test_entries_closed_before_the_error_stand_and_the_cut_one_is_dropped(
    parser_kind, text, kind, locations
):
    document = parse_sitemap(text)
    assert (document.kind, document.locations) == (kind, locations)
    assert len(document.problems) == 1 and document.problems[0].startswith("malformed XML (")


FORMATS = {
    "urlset": (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        "{}</urlset>\n",
        "  <url>\n    <loc>{}</loc>\n    <lastmod>2024-01-01</lastmod>\n  </url>\n",
        "</url>",
        "<urlset",
    ),
    "index": (
        "<sitemapindex>{}</sitemapindex>",
        "<sitemap><loc>{}</loc></sitemap>",
        "</sitemap>",
        "<sitemapindex",
    ),
    "rss": (
        "<rss version='2.0'><channel><title>t</title>{}</channel></rss>",
        "<item><title>a</title><link>{}</link></item>",
        "</item>",
        "<rss",
    ),
    "atom": (
        '<feed xmlns="http://www.w3.org/2005/Atom">{}</feed>',
        '<entry><title>a</title><link rel="alternate" href="{}"/></entry>',
        "</entry>",
        "<feed",
    ),
}
URLS = ("http://x/a", "http://x/b?q=1", "http://x/c")


def expected(name: str, text: str, position: int) -> tuple[str, tuple[str, ...]]:
    """The kind and locations of a file whose first error is at ``position``: the
    entries whose end tag ends at or before it."""
    _, _, end_tag, root = FORMATS[name]
    root_read = text.find(">", text.index(root)) < position
    kind = "index" if name == "index" and root_read else "urlset"
    ends = [m.end() for m in re.finditer(re.escape(end_tag), text)]
    return kind, tuple(url for url, end in zip(URLS, ends, strict=True) if end <= position)


def documents() -> Iterator[tuple[str, str]]:
    for name, (outer, entry, _, _) in FORMATS.items():
        yield name, outer.format("".join(entry.format(url) for url in URLS))


@pytest.mark.parametrize("chunk", [5, 1 << 16])
@pytest.mark.parametrize(("name", "text"), list(documents()))
def test_every_cut_and_every_error_position(parser_kind, monkeypatch, chunk, name, text):
    """Cut after every character, and ``<`` or ``&`` (an error anywhere) inserted
    before every character, with chunk boundaries everywhere or nowhere."""
    monkeypatch.setattr(parse, "_CHUNK", chunk)
    assert parse_sitemap(text) == SitemapDocument("index" if name == "index" else "urlset", URLS)
    for position in range(1, len(text) + 1):
        variants = [text[:position]] if text[:position].strip() != text.strip() else []
        variants += [text[:position] + junk + text[position:] for junk in "<&"]
        for variant in variants:
            document = parse_sitemap(variant)
            assert (document.kind, document.locations) == expected(name, text, position), variant
            assert document.problems[0].startswith("malformed XML ("), variant


def big(count: int) -> str:
    entries = "".join(f"<url><loc>http://x/{i}</loc></url>\n" for i in range(count))
    return f"<urlset>\n{entries}</urlset>\n"


def test_a_large_file_cut_inside_its_last_entry():
    text = big(6000)
    document = parse_sitemap(text[: text.rindex("</loc>") - 2])
    assert len(document.locations) == 5999
    assert document.locations[-1] == "http://x/5998"
    assert document.problems[0].startswith("malformed XML (Premature end of data")


@pytest.mark.parametrize("offset", [-40, -3, 0, 3, 40])
def test_an_error_in_a_later_chunk_keeps_every_entry_closed_before_it(parser_kind, offset):
    text = big(6000)
    position = 3 * parse._CHUNK + offset  # chunk 4, or near the boundary of 3 and 4
    document = parse_sitemap(text[:position] + "<" + text[position:])
    closed = text[:position].count("</url>")
    assert document.locations == tuple(f"http://x/{i}" for i in range(closed))
    assert document.problems[0].startswith("malformed XML (")
    cut = parse_sitemap(text[:position])
    assert cut.locations == document.locations


def test_a_file_over_the_bound_with_an_error_after_it_says_only_the_bound(monkeypatch):
    monkeypatch.setattr(parse, "MAX_URLS", 10)
    text = big(20)
    position = text.index("<url><loc>http://x/12")  # in the chunk of the 11th entry
    document = parse_sitemap(text[:position] + "<" + text[position:])
    assert document.locations == tuple(f"http://x/{i}" for i in range(10))
    assert document.problems == ("more than 10 URLs; the first 10 read",)
