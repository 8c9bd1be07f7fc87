"""``scrapy warc export``: the store's snapshots as WARC ``resource`` records.

The store keeps decoded bodies and no server headers, so an export claims nothing it
does not have: each snapshot is a ``resource`` record with the stored kind's media
type, dated with its ``fetchedAt``, followed by a ``metadata`` record with the fields
``scrapy warc import`` restores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from warcio.recordloader import ArcWarcRecord

from traverse_crawl.snapshots.model import BINARY_TYPES, MEDIA_TYPES, Snapshot, body_bytes
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.warc import records as warc

# An export is not on a crawl's hot path: the default zlib level.
EXPORT_LEVEL = 6


@dataclass(frozen=True)
class Page:
    """One exported snapshot: its page (a WACZ's ``pages.jsonl``) and its
    ``resource`` record's place in the file (the CDXJ index)."""

    url: str
    ts: str
    page_id: str
    source_ref: str
    media: str
    digest: str = ""
    offset: int = 0
    length: int = 0


def metadata_fields(snapshot: Snapshot, source_ref: str) -> dict[str, Any]:
    redirects = snapshot.get("redirects")
    return {
        "pageId": snapshot["sourceId"],
        "sourceRef": source_ref,
        "bodyHash": f"sha256:{snapshot['bodyHash']}",
        "fetchedAt": snapshot["fetchedAt"],
        "contentType": snapshot["contentType"],
        "status": str(snapshot["status"]),
        "redirects": json.dumps(redirects, ensure_ascii=False) if redirects else "",
        "etag": snapshot.get("etag") or "",
        "lastModified": snapshot.get("lastModified") or "",
        "rendered": "true" if snapshot.get("rendered") else "",
    }


def snapshot_records(snapshot: Snapshot) -> tuple[ArcWarcRecord, ArcWarcRecord, Page]:
    """The ``resource`` and ``metadata`` records of one snapshot, and its page entry."""
    source_ref = build_source_ref(snapshot)
    kind = snapshot["contentType"]
    media = MEDIA_TYPES.get(kind) or (
        "application/octet-stream" if kind in BINARY_TYPES else "text/plain; charset=utf-8"
    )
    resource = warc.resource_record(
        snapshot["url"],
        media,
        body_bytes(snapshot),
        snapshot["fetchedAt"],
        {},
    )
    meta = warc.metadata_record(
        snapshot["url"],
        metadata_fields(snapshot, source_ref),
        snapshot["fetchedAt"],
        warc.record_id(resource),
    )
    page = Page(snapshot["url"], snapshot["fetchedAt"], snapshot["sourceId"], source_ref, media)
    return resource, meta, page


def write_warc(
    out: Any, snapshots: Iterable[Snapshot], info: dict[str, str], filename: str
) -> Iterator[Page]:
    """Write a warcinfo record, then each snapshot's two records; yield its page."""
    offset = out.write(warc.serialize(warc.warcinfo_record(filename, info), EXPORT_LEVEL))
    for snapshot in snapshots:
        resource, meta, page = snapshot_records(snapshot)
        data = warc.serialize(resource, EXPORT_LEVEL)
        digest = str(resource.rec_headers.get_header("WARC-Payload-Digest") or "")
        written = out.write(data + warc.serialize(meta, EXPORT_LEVEL))
        yield replace(page, digest=digest, offset=offset, length=len(data))
        offset += written
