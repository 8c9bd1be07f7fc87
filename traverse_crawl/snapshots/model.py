"""The snapshot model: content type, text decoding, hashing.

A snapshot is a plain ``dict`` in Traverse's JSON key order, so that it is written
to the store and the manifest without any translation:
``sourceId, url, fetchedAt, status, contentType, body, bodyHash, bodyBytes?,
redirects?, etag?, lastModified?, fromCache?, notModified?, rendered?``.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any, Literal

from w3lib.encoding import html_to_unicode

ContentType = Literal["html", "text", "pdf", "png", "jpeg"]
CONTENT_TYPES: frozenset[str] = frozenset({"html", "text", "pdf", "png", "jpeg"})
BINARY_TYPES: frozenset[str] = frozenset({"pdf", "png", "jpeg"})

Snapshot = dict[str, Any]

# A Content-Type that resolves back to each stored kind (``resolve_content_type``): replay's
# responses and exported WARC records carry it.
MEDIA_TYPES: dict[str, str] = {
    "html": "text/html; charset=utf-8",
    "text": "text/plain; charset=utf-8",
    "pdf": "application/pdf",
    "png": "image/png",
    "jpeg": "image/jpeg",
}

# Fields the manifest carries; bodies live in the store, addressed by ``sourceRef``.
_MANIFEST_FIELDS = (
    "sourceId",
    "url",
    "fetchedAt",
    "status",
    "contentType",
    "bodyHash",
    "redirects",
    "etag",
    "lastModified",
    "fromCache",
    "notModified",
    "rendered",
)


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


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def iso_now(now: datetime | None = None) -> str:
    """``Date.prototype.toISOString()``: UTC with millisecond precision."""
    moment = now or datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def build_snapshot(
    *,
    source_id: str,
    url: str,
    status: int,
    content_type: ContentType,
    raw_body: bytes,
    content_type_header: str | None,
    redirects: list[str] | None = None,
    etag: str | None = None,
    last_modified: str | None = None,
    rendered: bool = False,
    fetched_at: str | None = None,
) -> Snapshot:
    """A fresh snapshot from a response. Optional fields are absent, not null.

    ``bodyHash`` is the SHA-256 of the text's UTF-8 bytes, or of the raw bytes for
    pdf, png and jpeg, which keep them in ``bodyBytes`` (and an empty ``body``).
    """
    snap: Snapshot = {
        "sourceId": source_id,
        "url": url,
        "fetchedAt": fetched_at or iso_now(),
        "status": status,
        "contentType": content_type,
    }
    if content_type in BINARY_TYPES:
        snap["body"] = ""
        snap["bodyHash"] = sha256_hex(raw_body)
        snap["bodyBytes"] = raw_body
    else:
        text = decode_text(raw_body, content_type_header)
        snap["body"] = text
        snap["bodyHash"] = sha256_hex(text.encode("utf-8", "surrogatepass"))
    if redirects:
        snap["redirects"] = list(redirects)
    if etag:
        snap["etag"] = etag
    if last_modified:
        snap["lastModified"] = last_modified
    if rendered:
        snap["rendered"] = True
    return snap


def manifest_view(snapshot: Snapshot) -> Snapshot:
    """The snapshot as the manifest shows it: every field but the body."""
    return {key: snapshot[key] for key in _MANIFEST_FIELDS if key in snapshot}


def body_bytes(snapshot: Snapshot) -> bytes:
    """The body as bytes: raw for pdf/png/jpeg, the text as UTF-8 otherwise."""
    if snapshot.get("bodyBytes") is not None:
        return bytes(snapshot["bodyBytes"])
    text: str = snapshot["body"]
    return text.encode("utf-8", "surrogatepass")


def with_flags(snapshot: Snapshot, **flags: bool) -> Snapshot:
    """``{...snapshot, flag: true}`` with JavaScript's key order (new keys last)."""
    out = dict(snapshot)
    for key, value in flags.items():
        if value:
            out[key] = True
    return out


def body_size(snapshot: Snapshot) -> int:
    """The manifest's optional page field ``bodySize``: ``len(body_bytes)``."""
    return len(body_bytes(snapshot))
