"""Tolerant HTML parsing shared by link discovery and the shell heuristic.

lxml's HTML parser (libxml2) recovers from any markup, lowercases tag and
attribute names, and drops comments and processing instructions. NUL bytes
(binary junk served as text/html) are removed first, since lxml refuses them.
"""

from __future__ import annotations

from lxml import etree, html

# Built once: creating a parser per page showed in the replay profile. Parsing
# happens in the reactor thread only, so one parser is never used concurrently.
_PARSER = html.HTMLParser(recover=True, remove_comments=True, remove_pis=True)


def parse_html(text: str) -> etree._Element | None:
    """The document's root element, or None for an empty or unparsable page."""
    text = text.replace("\x00", "")
    if not text.strip():
        return None
    try:
        return html.document_fromstring(text, parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None
