"""Evidence spans: given only where the text is verbatim in the stored body at its node,
and then exactly there; never a neighbour's span, never a span of rewritten text."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traverse_crawl.extraction.extractor import Extractor, parse_body
from traverse_crawl.extraction.rules import rules_from_bytes

EVERYTHING = b"""
[[types]]
name = "all"
[types.fields]
texts = { selector = "xpath://text()", many = true }
attributes = { selector = "xpath://@*", many = true }
"""


def entries(body: str, rules: bytes = EVERYTHING) -> dict[str, list[dict[str, Any]]]:
    extraction = Extractor(rules_from_bytes(rules)).extract(body, "http://site.test/")
    assert len(extraction.items) == 1
    return extraction.items[0]["evidence"]


def spans(body: str, key: str = "texts") -> list[tuple[str, tuple[int, int] | None]]:
    return [(e["text"], tuple(e["span"]) if "span" in e else None) for e in entries(body)[key]]


def check_never_wrong(body: str) -> None:
    """Every span holds its text, and the spans of text nodes follow document order."""
    evidence = entries(body)
    last = -1
    for entry in evidence.get("texts", []):
        if "span" in entry:
            start, end = entry["span"]
            assert body[start:end] == entry["text"]
            assert start > last, f"span {entry['span']} out of document order"
            last = end - 1
    for entry in evidence.get("attributes", []):
        if "span" in entry:
            start, end = entry["span"]
            assert body[start:end] == entry["text"]


def at(body: str, text: str, occurrence: int = 0) -> tuple[int, int]:
    start = -1
    for _ in range(occurrence + 1):
        start = body.index(text, start + 1)
    return start, start + len(text)


def test_repeated_texts_get_their_own_nodes_spans():
    body = "<html><body><p>same</p><p>same</p><div><b>same</b>same</div></body></html>"
    assert spans(body) == [("same", at(body, "same", n)) for n in range(4)]


def test_an_entity_is_not_verbatim_so_it_has_no_span():
    body = "<html><body><p>Tom &amp; Jerry</p><p>Tom & Jerry</p></body></html>"
    assert spans(body) == [("Tom & Jerry", None), ("Tom & Jerry", at(body, "Tom & Jerry"))]


def test_whitespace_is_kept_and_a_rewritten_line_ending_has_no_span():
    body = "<html><body><p>  padded\ttext \n</p><p>two\r\nlines</p></body></html>"
    assert spans(body) == [("  padded\ttext \n", at(body, "  padded\ttext \n")),
                           ("two\nlines", None)]  # fmt: skip


def test_attribute_values_in_any_quoting():
    body = (
        "<html><body><a href=\"/a\" title='t' data-x=plain>x</a>"
        '<a HREF="/a" class="c &amp; d">y</a></body></html>'
    )
    second_href = body.index('HREF="/a"') + len('HREF="')
    assert spans(body, "attributes") == [
        ("/a", at(body, '"/a"')[0:1] and (body.index('"/a"') + 1, body.index('"/a"') + 3)),
        ("t", (body.index("'t'") + 1, body.index("'t'") + 2)),
        ("plain", at(body, "plain")),
        ("/a", (second_href, second_href + 2)),
        ("c & d", None),
    ]


def test_tails_and_comments():
    body = (
        "<html><body><div>lead<!-- note -->after<br>tail<i>i</i>end"
        "<span>s</span>last</div><p>x</p></body></html>"
    )
    assert spans(body) == [
        ("lead", at(body, "lead")),
        ("after", at(body, "after")),
        ("tail", at(body, "tail")),
        ("i", (body.index("<i>i") + 3, body.index("<i>i") + 4)),
        ("end", at(body, "end")),
        ("s", (body.index("<span>s") + 6, body.index("<span>s") + 7)),
        ("last", at(body, "last")),
        ("x", (body.index("<p>x") + 3, body.index("<p>x") + 4)),
    ]
    check_never_wrong(body)


def test_raw_text_and_markup_inside_it_do_not_shift_the_mapping():
    body = (
        "<html><head><script>var s = '<p>fake</p>';</script><title><p>t</p></title></head>"
        "<body><p>real</p><p>real</p></body></html>"
    )
    got = dict((t, s) for t, s in spans(body) if t == "real")
    assert got  # both "real" texts: each at its own node
    assert [s for t, s in spans(body) if t == "real"] == [
        at(body, "real", 0),
        at(body, "real", 1),
    ]
    check_never_wrong(body)


def test_elements_the_parser_adds_or_drops_give_no_wrong_span():
    # A table without <tbody>, unclosed <p>s, stray end tags, a second <body>.
    body = (
        "<table><tr><td>cell</td></tr><tr><td>cell</td></tr></table>"
        "<p>one<p>two</b></i><body class=x><p>three</p>"
    )
    check_never_wrong(body)
    assert [s for t, s in spans(body) if t == "cell"] == [at(body, "cell", 0), at(body, "cell", 1)]


@pytest.mark.parametrize(
    "body",
    [
        "<HTML><BODY><P CLASS=a>Upper</P><P>Upper</P></BODY></HTML>",
        "<p\n  class='multi\nline'>text</p>\n\n<p>text</p>",
        "\n\n  <html><body>\n<p>lead</p>\r<p>cr</p>\r\n<p>crlf</p></body></html>",
        "<div><p>a<b>b<i>c</b>d</i>e</p></div>",
        "<ul><li>1<li>2<li>3</ul><select><option>o<option>o</select>",
        "<svg><text>in svg</text></svg><math><mi>x</mi></math><p>after</p>",
        "<textarea><p>not a tag</p></textarea><p>not a tag</p>",
        "<p>nul\x00here</p><p>ok</p>",
        '<p title="a > b">quoted gt</p><p>quoted gt</p>',
    ],
)
def test_never_wrong_on_awkward_markup(body):
    check_never_wrong(body)


def test_element_results_are_their_markup_and_have_a_span_when_verbatim():
    rules = b'[[types]]\nname = "e"\n[types.fields]\nh = "css:h2"\n'
    body = "<html><body><h2>Title</h2></body></html>"
    (entry,) = entries(body, rules)["h"]
    assert entry["text"] == "<h2>Title</h2>"
    assert tuple(entry["span"]) == at(body, "<h2>Title</h2>")
    assert entry["node"] == "/html/body/h2"


# -- an oracle: a span is right when writing over it changes exactly its node --------

_TAGS = ["p", "b", "i", "div", "span", "table", "tr", "td", "li", "ul", "br", "script",
         "title", "textarea", "body", "html", "head", "a", "option", "select"]  # fmt: skip
_TEXTS = ["x", "x", "xx", " ", "\n", "a&amp;b", "a & b", "x\r\ny", "<!-- c -->"]


@st.composite
def documents(draw: Any) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.integers(0, 3))
        tag = draw(st.sampled_from(_TAGS))
        if kind == 0:
            attr = draw(
                st.sampled_from(["", ' class="x"', " id=x", " title='x'", ' data-a="a&amp;b"'])
            )
            parts.append(f"<{tag.upper() if draw(st.booleans()) else tag}{attr}>")
        elif kind == 1:
            parts.append(f"</{tag}>")
        else:
            parts.append(draw(st.sampled_from(_TEXTS)))
    return "".join(parts)


def _rewritten(body: str, start: int, end: int) -> str:
    return body[:start] + "Z" * (end - start) + body[end:]


@settings(max_examples=300, deadline=None)
@given(documents())
def test_writing_over_a_span_changes_exactly_its_node(body):
    extraction = Extractor(rules_from_bytes(EVERYTHING)).extract(body, "http://site.test/")
    evidence = extraction.items[0]["evidence"] if extraction.items else {}
    for key in ("texts", "attributes"):
        for entry in evidence.get(key, []):
            if "span" not in entry:
                continue
            start, end = entry["span"]
            assert body[start:end] == entry["text"]
            changed = _rewritten(body, start, end)
            root, _ = parse_body(changed)
            assert root is not None
            found = root.xpath(entry["node"])
            assert found == ["Z" * (end - start)], (entry, changed)
