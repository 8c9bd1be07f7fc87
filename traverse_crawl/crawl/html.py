"""Tolerant, bounded HTML parsing shared by link discovery and the shell heuristic.

lxml's HTML parser (libxml2) recovers from any markup, lowercases tag and
attribute names, and drops comments and processing instructions. NUL bytes
(binary junk served as text/html) are removed first, since lxml refuses them.
Each bound a page hits is reported by ``ParsedHtml.warnings`` (docs/settings.md,
"Bounds on the work one page can cause").
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from lxml import etree, html

# libxml2 checks each attribute of a tag against all earlier ones for duplicates:
# the cost grows with the square of the attributes on one tag (measured: 10,000
# attributes 0.08 s, 40,000 1.8 s; 250,000, a 2.6 MB page, over a minute). A start
# tag with more is cut after its MAX_ATTRIBUTES-th attribute before parsing, found
# with a regex that only looks at start tags longer than _LONG_TAG characters, so
# ordinary pages pay one linear scan.
MAX_ATTRIBUTES = 1000
# libxml2 stops parsing (silently, in recover mode) at 256 open elements by
# default, which 300 unclosed <font>, <div> or <li> of legacy markup reach: every
# later link was lost. ``huge_tree`` raises the limit to libxml2's 2048; past that
# the page gets a warning that the rest of it was not read.
MAX_DEPTH = 2048  # libxml2's limit with XML_PARSE_HUGE (lxml's huge_tree)
_LONG_TAG = 4096
# A start tag of at least _LONG_TAG characters (a '>' inside quotes ends it
# early, which only shortens the text examined).
_LONG_START_TAG = re.compile(rf"<[A-Za-z][^<>]{{{_LONG_TAG},}}")
# One attribute as the HTML tokenizer reads it: a name, then an optional value.
_ATTRIBUTE = re.compile(r"""[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]*))?""")

# Built once per thread: creating a parser per page showed in the replay
# profile, and an lxml parser must not be used by two threads at once.
_local = threading.local()


def _parser() -> html.HTMLParser:
    parser: html.HTMLParser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = html.HTMLParser(
            recover=True, remove_comments=True, remove_pis=True, huge_tree=True
        )
        _local.parser = parser
    return parser


@dataclass
class ParsedHtml:
    root: etree._Element | None
    warnings: list[str] = field(default_factory=list)


def cap_attributes(text: str, limit: int = MAX_ATTRIBUTES) -> tuple[str, int]:
    """``text`` with every start tag cut after ``limit`` attributes, and how many were cut."""
    pieces: list[str] = []
    cut = 0
    position = 0
    for match in _LONG_START_TAG.finditer(text):
        name_end = match.start() + 1
        while name_end < match.end() and not text[name_end].isspace():
            name_end += 1
        count = 0
        for attribute in _ATTRIBUTE.finditer(text, name_end, match.end()):
            count += 1
            if count == limit:
                pieces.append(text[position : attribute.end()])
                pieces.append(">")
                position = match.end() + (1 if text.startswith(">", match.end()) else 0)
                cut += 1
                break
    if not cut:
        return text, 0
    pieces.append(text[position:])
    return "".join(pieces), cut


def _bounded_text(text: str) -> tuple[str, list[str]]:
    """The text the parser reads (NULs removed, long tags cut) and the bounds' warnings."""
    text = text.replace("\x00", "")
    warnings = []
    text, cut = cap_attributes(text)
    if cut:
        warnings.append(
            f"{cut} tag(s) with more than {MAX_ATTRIBUTES} attributes: "
            f"attributes after the first {MAX_ATTRIBUTES} were not read"
        )
    return text, warnings


def _depth_warning(log: etree._ListErrorLog, warnings: list[str]) -> None:
    if any("Excessive depth" in entry.message for entry in log):
        warnings.append(
            f"markup nested deeper than {MAX_DEPTH} levels; the page was read only up to that point"
        )


def parse_html_bounded(text: str) -> ParsedHtml:
    """The document's root element (None for an empty or unparsable page), and
    a warning for each bound the page hit."""
    if not text.replace("\x00", "").strip():
        return ParsedHtml(None)
    text, warnings = _bounded_text(text)
    parser = _parser()
    try:
        root = html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError):
        return ParsedHtml(None, warnings)
    _depth_warning(parser.error_log, warnings)
    return ParsedHtml(root, warnings)


@dataclass
class Anchors:
    """A page's ``<a href>`` values outside ``<template>``, in document order (each
    once), and the ``href`` of its first ``<base>`` (None: no base, or one without href)."""

    hrefs: list[str]
    base_href: str | None
    warnings: list[str] = field(default_factory=list)


_FEED_CHARS = 1 << 20  # characters handed to the streaming parser at a time


def anchors_streamed(text: str) -> Anchors | None:
    """``Anchors`` of the page as ``parse_html_bounded``'s tree has them, read by
    libxml2's push parser (the same parser, options and bounds) with each element let
    go once it has ended: a page's tree is never whole in memory (a 50 MB page's tree
    is about 17 times its size). For large pages (``crawl/links.py``). None for a text
    the push parser cannot take (a lone surrogate): the tree reads it."""
    if not text.replace("\x00", "").strip():
        return Anchors([], None)
    text, warnings = _bounded_text(text)
    parser = etree.HTMLPullParser(
        events=("start", "end"), recover=True, remove_comments=True, remove_pis=True,
        huge_tree=True,
    )  # fmt: skip
    hrefs: list[str] = []
    base: list[str | None] = []  # the first <base>'s href, once one was seen
    templates = 0  # open <template> elements: anchors inside are inert
    # What follows ``</html>`` is a second root in libxml2's document. The tree's walk
    # (``crawl/links.py``) reads the first root only, unless it holds a <template>: its
    # XPath then reads the whole document. ``later``: the anchors after the first root.
    after_root = template_in_root = False
    later: list[str] = []
    # Each href once: a repeated one adds nothing to a page's links (``crawl/links.py``
    # reads them in order, first wins), and a large page repeats its menus and footers.
    distinct: set[str] = set()
    try:
        for start in range(0, len(text) + 1, _FEED_CHARS):
            if start < len(text):
                parser.feed(text[start : start + _FEED_CHARS])
            else:
                parser.close()
            for event, element in parser.read_events():
                tag = element.tag
                if event == "start":
                    if tag == "a" and not templates:
                        href = element.get("href")
                        if href and href not in distinct:
                            distinct.add(href)
                            (later if after_root else hrefs).append(href)
                    elif tag == "template":
                        templates += 1
                        template_in_root = template_in_root or not after_root
                    elif tag == "base" and not base and not after_root:
                        base.append(element.get("href"))
                    continue
                if tag == "template":
                    templates -= 1
                element.clear(keep_tail=False)  # ended: nothing of it is read again
                parent = element.getparent()
                if parent is None:  # a root ended: what follows ``</html>`` is another root
                    after_root = True
                    continue
                while element.getprevious() is not None:
                    del parent[0]
    except UnicodeEncodeError:  # a lone surrogate: the push parser takes UTF-8 only
        return None
    except (etree.ParserError, etree.XMLSyntaxError, ValueError):
        return Anchors([], None, warnings)
    _depth_warning(parser.feed_error_log, warnings)  # a push parser's own log
    if template_in_root:
        hrefs += later
    return Anchors(hrefs, base[0] if base else None, warnings)


def parse_html(text: str) -> etree._Element | None:
    """The document's root element, or None for an empty or unparsable page."""
    return parse_html_bounded(text).root
