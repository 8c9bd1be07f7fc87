"""A large page's spans are mapped line by line, only as far as evidence asks
(extraction/spans.py): every span, and every absence of one, is what mapping the whole
page at once gives, on any page."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traverse_crawl.extraction import spans
from traverse_crawl.extraction.extractor import Extractor, parse_body
from traverse_crawl.extraction.items import encode_item
from traverse_crawl.extraction.rules import rules_from_bytes

EVERYTHING = rules_from_bytes(b"""
[[types]]
name = "all"
[types.fields]
texts = { selector = "xpath://text()", many = true }
attributes = { selector = "xpath://@*", many = true }
elements = { selector = "xpath://*", many = true }
comments = { selector = "xpath://comment()", many = true }
[[types]]
name = "each"
each = "xpath://*"
[types.fields]
own = { selector = "xpath:text()", many = true }
after = { selector = "xpath:following-sibling::text()", many = true }
""")

_TAGS = ["p", "b", "i", "div", "span", "table", "tr", "td", "li", "ul", "br", "script", "title",
         "textarea", "style", "body", "html", "head", "a", "option", "select", "img"]  # fmt: skip
_TEXTS = ["x", "x", "xx", " ", "\n", "\r\n", "\r", "a&amp;b", "x\ny", "<!-- c -->",
          "<!-- c\n -->", "<", "<!DOCTYPE html>", "<?pi x?>"]  # fmt: skip


def items_file(body: str, lazy_from: int, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    monkeypatch.setattr(spans, "LAZY_FROM", lazy_from)
    extraction = Extractor(EVERYTHING, max_items_per_page=100_000).extract(
        body, "http://site.test/"
    )
    assert not extraction.warnings
    return [encode_item(item) for item in extraction.items]


def assert_same_maps(body: str) -> None:
    """Every node's start tag, end and every text's and attribute's span, asked in
    an order that is not document order, are those of the whole-page map."""
    root, exact = parse_body(body)
    if root is None or not exact:
        return
    whole = spans.SourceMap(body, root, lazy_from=len(body) + 1)
    lines = spans.SourceMap(body, root, lazy_from=0)
    nodes: list[Any] = [*root.itersiblings(preceding=True), *root.iter(), *root.itersiblings()]
    for number, node in enumerate(nodes[1::2] + nodes[::-2]):
        assert lines.start_tag(node) == whole.start_tag(node), node
        if number < 30:  # where an end tag is: a walk over the tags after it
            assert lines._element_end(node) == whole._element_end(node), node
    for result in root.xpath("//text()|//@*")[:300]:
        assert lines.span(result, str(result)) == whole.span(result, str(result)), result


@st.composite
def documents(draw: Any) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.integers(0, 3))
        tag = draw(st.sampled_from(_TAGS))
        if kind == 0:
            attribute = draw(st.sampled_from(["", ' class="x"', "\n id=x", " title='a\nb'"]))
            parts.append(f"<{tag.upper() if draw(st.booleans()) else tag}{attribute}>")
        elif kind == 1:
            parts.append(f"</{tag}>")
        else:
            parts.append(draw(st.sampled_from(_TEXTS)))
    return "".join(parts)


@settings(max_examples=300, deadline=None)
@given(documents())
def test_line_by_line_gives_the_whole_page_maps_spans(body):
    assert_same_maps(body)


TRICKY = [
    "<table><tr><td>cell</td></tr><tr><td>cell</td></tr></table>"
    "<p>one<p>two</b></i><body class=x><p>three</p>",
    "<html><head><script>var s = '<p>fake</p>';</script><title><p>t</p></title></head>"
    "<body><p>real</p><p>real</p></body></html>",
    "\n\n  <html><body>\n<p>lead</p>\r<p>cr</p>\r\n<p>crlf</p></body></html>",
    "<div><p>a<b>b<i>c</b>d</i>e</p></div>\n<ul><li>1<li>2<li>3</ul><select><option>o</select>",
    "<p>one</p><!-- two <p>three",
    '<p>one</p><script>var a = "<!-- <p>two</p>";</script><p>x</p> -->\n<p>y</p>',
    "<!-- before --><html><body><p>a</p></body></html><!-- after --><p>late</p>",
    "<html><body><div>lead<!-- note -->after<br>tail<i>i</i>end<span>s</span>last</div>",
    # Lines past libxml2's 65,535th: no spans there, and the lines before them kept.
    "<html><body><div>\n" + "<p>x</p>\n" * 65540 + "</div><br><p>q</p>\n<i></i></body></html>",
    "<html><body><div>a</div>\n" + "<p>x</p>\n" * 65531
    + "<span>s</span>\n<b>1</b><b>2</b>\n<i>i</i><br>\n</body></html>",
]  # fmt: skip


@pytest.mark.parametrize("body", TRICKY, ids=range(len(TRICKY)))
def test_tricky_pages_give_the_same_spans(body):
    assert_same_maps(body)


@pytest.mark.parametrize("body", TRICKY[:8], ids=range(8))
def test_tricky_pages_give_the_same_items_file(body, monkeypatch):
    assert items_file(body, 0, monkeypatch) == items_file(body, 10**9, monkeypatch)


def test_a_page_of_cards_on_one_line_and_on_many_gives_the_same_items(monkeypatch):
    card = '<div class="card"><h2>Card {i}</h2><span class="price">${i}.00</span></div>'
    for joiner in ("", "\n", "\r\n"):
        body = "<html><body>" + joiner.join(card.format(i=i) for i in range(300)) + "</body>"
        lazy = items_file(body, 0, monkeypatch)
        assert lazy == items_file(body, 10**9, monkeypatch)
        assert b'"span"' in lazy[0]
