"""A response's content type, as Traverse names it, and its body decoded as text.

Pure: the fetch layer's, as a block-page check, a seed's ``contentType`` hint and a
snapshot all speak of it (``snapshots/model.py`` keeps the snapshot itself).
"""

from __future__ import annotations

from typing import Literal

from w3lib.encoding import html_to_unicode

ContentType = Literal["html", "text", "pdf", "png", "jpeg"]
CONTENT_TYPES: frozenset[str] = frozenset({"html", "text", "pdf", "png", "jpeg"})


def resolve_content_type(header: str | None, hint: str | None = None) -> ContentType:
    """Traverse's rules: a hint wins; else substrings of the lowercased header, in order."""
    if hint:
        return hint  # type: ignore[return-value]
    value = (header or "").lower()
    if "html" in value:
        return "html"
    if "pdf" in value:
        return "pdf"
    if "image/png" in value:
        return "png"
    if "image/jpeg" in value or "image/jpg" in value:
        return "jpeg"
    return "text"


def decode_text(body: bytes, content_type_header: str | None) -> str:
    """w3lib's order: BOM, then the header's charset, then ``<meta>``, then UTF-8.

    Invalid bytes become U+FFFD. (Traverse always decodes as UTF-8.)
    """
    _, text = html_to_unicode(content_type_header, body, default_encoding="utf-8")
    return text
