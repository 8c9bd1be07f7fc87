"""The snapshot model: key order, hashing, the manifest's view (content types and text
decoding: ``fetch/content.py``).

A snapshot is a plain ``dict`` (typed as ``Snapshot``) in Traverse's JSON key order,
so that it is written to the store and the manifest without any translation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any, TypedDict

from traverse_crawl.fetch.content import ContentType, decode_text

BINARY_TYPES: frozenset[str] = frozenset({"pdf", "png", "jpeg"})


class _SnapshotFields(TypedDict):
    sourceId: str  # the page id (docs/snapshots.md)
    url: str  # the final URL, after redirects
    fetchedAt: str  # ISO 8601 UTC with milliseconds, as JavaScript's toISOString()
    status: int
    contentType: str  # one of fetch.content.CONTENT_TYPES when this crawler wrote it
    body: str  # the decoded text; "" for pdf, png and jpeg
    bodyHash: str  # SHA-256 hex of the raw bytes (binary) or of the text as UTF-8


class Snapshot(_SnapshotFields, total=False):
    """One stored response, in Traverse's key order; optional keys are absent, never null.

    A snapshot read from the store keeps any other key its file had.
    """

    bodyBytes: bytes  # pdf, png, jpeg: the raw body (``bodyBytesBase64`` on disk)
    redirects: list[str]  # URLs requested before the final one
    etag: str
    lastModified: str
    fromCache: bool  # served from the store (replay, or a 304 revalidation)
    notModified: bool  # a 304 revalidation
    rendered: bool  # taken from Chromium
    # TRAVERSE_ROBOTS_META=obey: the response's X-Robots-Tag headers, as sent, so that a
    # replay judges the page as its capture did (the store keeps no other header).
    xRobotsTag: list[str]


# A Content-Type that resolves back to each stored kind (``resolve_content_type``,
# ``fetch/content.py``): replay's
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
    binary = content_type in BINARY_TYPES
    text = "" if binary else decode_text(raw_body, content_type_header)
    snap: Snapshot = {
        "sourceId": source_id,
        "url": url,
        "fetchedAt": fetched_at or iso_now(),
        "status": status,
        "contentType": content_type,
        "body": text,
        "bodyHash": sha256_hex(raw_body if binary else text.encode("utf-8", "surrogatepass")),
    }
    if binary:
        snap["bodyBytes"] = raw_body
    if redirects:
        snap["redirects"] = list(redirects)
    if etag:
        snap["etag"] = etag
    if last_modified:
        snap["lastModified"] = last_modified
    if rendered:
        snap["rendered"] = True
    return snap


def manifest_view(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot as the manifest shows it: every field but the body."""
    fields: Mapping[str, Any] = snapshot  # read by name, in the manifest's order
    return {key: fields[key] for key in _MANIFEST_FIELDS if key in fields}


def body_bytes(snapshot: Snapshot) -> bytes:
    """The body as bytes: raw for pdf/png/jpeg, the text as UTF-8 otherwise."""
    if snapshot.get("bodyBytes") is not None:
        return bytes(snapshot["bodyBytes"])
    text: str = snapshot["body"]
    return text.encode("utf-8", "surrogatepass")


def with_flags(
    snapshot: Snapshot, *, fromCache: bool = False, notModified: bool = False
) -> Snapshot:
    """``{...snapshot, flag: true}`` with JavaScript's key order (new keys last)."""
    out = snapshot.copy()
    if fromCache:
        out["fromCache"] = True
    if notModified:
        out["notModified"] = True
    return out


def body_size(snapshot: Snapshot) -> int:
    """The manifest's optional page field ``bodySize``: ``len(body_bytes)``."""
    return len(body_bytes(snapshot))


def body_matches(snapshot: Snapshot, data: bytes | None = None) -> bool:
    """Whether the stored body is still the one its ``bodyHash`` names (the SHA-256 of
    the raw bytes for pdf/png/jpeg, of the text as UTF-8 otherwise; ``data``: those
    bytes, when made already). A body that is not is not the capture, whatever its
    ``sourceRef`` says: check before using it."""
    return sha256_hex(body_bytes(snapshot) if data is None else data) == snapshot["bodyHash"]
