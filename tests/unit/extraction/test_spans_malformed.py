"""Extraction of malformed and truncated pages (extraction/extractor.py, spans.py): the
values libxml2's HTML parser gives, pinned, each with the span of its verbatim text, or
none; a span is never wrong, whatever the parser recovered."""

from __future__ import annotations

import pytest

from traverse_crawl.extraction.extractor import Extractor
from traverse_crawl.extraction.rules import rules_from_bytes

pytestmark = pytest.mark.parsing

EVERYTHING = rules_from_bytes(b"""
[[types]]
name = "all"
[types.fields]
texts = { selector = "xpath://text()", many = true }
attributes = { selector = "xpath://@*", many = true }
""")

Found = list[tuple[str, tuple[int, int] | None]]


def found(body: str) -> dict[str, Found]:
    extraction = Extractor(EVERYTHING).extract(body, "http://site.test/")
    assert extraction.warnings == []
    evidence = extraction.items[0]["evidence"] if extraction.items else {}
    result = {}
    for key, entries in evidence.items():
        result[key] = [(e["text"], tuple(e["span"]) if "span" in e else None) for e in entries]
        for text, span in result[key]:
            assert span is None or body[span[0] : span[1]] == text
    return result


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # The page ends inside a tag or an attribute: the cut tag is not read.
        ('<p>one</p>\n<p class="c">two</p><p cla',
         {"texts": [("one", (3, 6)), ("two", (24, 27))], "attributes": [("c", (21, 22))]}),
        ('<p>one</p>\n<a href="/x" title="t">two</a><a href="/y',
         {"texts": [("one", (3, 6)), ("two", (34, 37))],
          "attributes": [("/x", (20, 22)), ("t", (31, 32))]}),
        # ... inside a comment or a script, or inside a text.
        ("<p>one</p><!-- two <p>three", {"texts": [("one", (3, 6))]}),
        ('<p>one</p><script>var a = "<p>two</p>";',
         {"texts": [("one", (3, 6)), ('var a = "<p>two</p>";', (18, 39))]}),
        ("<html><body><p>one</p><p>tw", {"texts": [("one", (15, 18)), ("tw", (25, 27))]}),
        # Elements left open at the end of the page.
        ("<div><p>one<p>two<ul><li>three",
         {"texts": [("one", (8, 11)), ("two", (14, 17)), ("three", (25, 30))]}),
        # Errors in the middle: a stray "<", an invalid character reference, stray ends.
        ("<p>one</p></div><<p>two</p>&#xZZ;<b>three</b>",
         {"texts": [("one", (3, 6)), ("<", (16, 17)), ("two", (20, 23)), ("&#xZZ;", (27, 33)),
                    ("three", (36, 41))]}),
        ("</p></b><p>one</p></i>two<b>three",
         {"texts": [("one", (11, 14)), ("two", (22, 25)), ("three", (28, 33))]}),
    ],
)  # fmt: skip
def test_malformed_pages_values_and_spans(body, expected):
    assert found(body) == expected


def test_every_cut_of_a_page_gives_no_wrong_span():
    body = (
        '<html><head><title>T</title></head><body><div id="main" class=a>'
        "<p>one &amp; two</p><ul><li>x<li>y</ul><!-- c --><a href='/l'>link</a></div></body>"
    )
    for cut in range(1, len(body) + 1):
        found(body[:cut])
    assert ("link", (body.index("link<"), body.index("</a>"))) in found(body)["texts"]
