"""``scrapy warc import``: WARC/WACZ records into snapshots (docs/web-archives.md).

Every 2xx ``response`` and every ``resource`` record of an http(s) URL whose media
type is one of the store's kinds becomes a snapshot of page id
``encodeURIComponent(ID)::URL``; a ``metadata`` record written by traverse_crawl
restores the snapshot's other fields, so an export imports back to the snapshots it
came from. Damaged records are skipped and reported (``warc/reader.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecord

from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.utils.javascript import encode_uri_component
from traverse_crawl.warc.reader import read_records

Source = tuple[str, Callable[[], BinaryIO], int]  # display name, opener, size


@dataclass
class ImportReport:
    records: int = 0
    imported: int = 0
    skipped: int = 0
    superseded: int = 0
    warnings: list[str] = field(default_factory=list)


def media_kind(content_type: str | None) -> str | None:
    """The store kind of a media type, or None when the store has no kind for it."""
    value = (content_type or "").split(";", 1)[0].strip().lower()
    kind = snap.resolve_content_type(value)
    if kind != "text":
        return kind
    return "text" if value.startswith("text/") else None


def fetched_at(warc_date: str) -> str:
    """A WARC-Date (seconds or a fraction) as ``Date.prototype.toISOString()``."""
    text = warc_date.strip().rstrip("Z")
    moment = datetime.fromisoformat(text[:26]).replace(tzinfo=timezone.utc)
    return snap.iso_now(moment)


def _fields(record: ArcWarcRecord) -> dict[str, str]:
    block = record.content_stream().read().decode("utf-8", "replace")
    out: dict[str, str] = {}
    for line in block.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip()] = value.strip()
    return out


def _our_metadata(sources: list[Source]) -> dict[str, dict[str, str]]:
    """traverse_crawl's metadata records, by the record id they describe."""
    found: dict[str, dict[str, str]] = {}

    def handle(record: ArcWarcRecord, _offset: int) -> None:
        refers = record.rec_headers.get_header("WARC-Concurrent-To")
        if record.rec_type == "metadata" and refers:
            fields = _fields(record)
            if "pageId" in fields:
                found[refers] = fields

    for _name, opener, size in sources:
        with opener() as fh:
            for _bad in read_records(fh, size, handle):
                pass  # reported by the second pass
    return found


def candidates(
    sources: list[Source],
    source_id: str,
    report: ImportReport,
    progress: Callable[[int], None] = lambda _: None,
) -> Iterator[Snapshot]:
    """Snapshots from ``sources``, in file order; every bad record is in ``report``."""
    metadata = _our_metadata(sources)
    prefix = encode_uri_component(source_id) + "::"
    found: list[Snapshot] = []

    def handle(record: ArcWarcRecord, offset: int) -> None:
        report.records += 1
        if report.records % 1000 == 0:
            progress(report.records)
        built = _snapshot(record, metadata, prefix)
        if built is not None:
            found.append(built)

    for name, opener, size in sources:
        with opener() as fh:
            for bad in read_records(fh, size, handle):
                report.skipped += 1
                report.warnings.append(
                    f"{name}: skipped record at offset {bad.offset}: {bad.reason}"
                )
                yield from _drain(found)
            yield from _drain(found)


def _drain(found: list[Snapshot]) -> Iterator[Snapshot]:
    while found:
        yield found.pop(0)


def _snapshot(
    record: ArcWarcRecord, metadata: dict[str, dict[str, str]], prefix: str
) -> Snapshot | None:
    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI") or ""
    if record.rec_type == "response" and record.http_headers is not None:
        status = int(record.http_headers.get_statuscode() or 0)
        http = record.http_headers
        content_type = http.get_header("Content-Type")
    elif record.rec_type == "resource":
        status, http = 200, None
        content_type = headers.get_header("Content-Type")
    else:
        return None
    kind = media_kind(content_type)
    if not 200 <= status < 300 or kind is None or not url.startswith(("http:", "https:")):
        return None  # wget's own log and manifest are resource records of metadata:// URLs
    body = record.content_stream().read()
    ours = metadata.get(str(headers.get_header("WARC-Record-ID")), {})
    page_url = ours.get("pageId", "").partition("::")[2] or url
    stored_status = ours.get("status")
    built = snap.build_snapshot(
        source_id=prefix + page_url,
        url=url,
        status=int(stored_status) if stored_status and stored_status.isdigit() else status,
        content_type=kind,  # type: ignore[arg-type]
        raw_body=body,
        content_type_header=content_type,
        redirects=json.loads(ours["redirects"]) if ours.get("redirects") else None,
        etag=ours.get("etag") or (http.get_header("ETag") if http else None),
        last_modified=ours.get("lastModified")
        or (http.get_header("Last-Modified") if http else None),
        rendered=ours.get("rendered") == "true",
        fetched_at=ours.get("fetchedAt") or fetched_at(str(headers.get_header("WARC-Date"))),
    )
    return built


def file_source(path: str) -> Source:
    return (path, lambda: open(path, "rb"), os.path.getsize(path))
