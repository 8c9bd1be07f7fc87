"""``scrapy warc import``: WARC/ARC/WACZ records into snapshots (docs/web-archives.md).

Every 2xx ``response`` to a GET and every ``resource`` record of an http(s) URL whose
media type is one of the store's kinds becomes a snapshot of page id
``encodeURIComponent(ID)::URL``, the URL in the frontier's normal form; a ``revisit``
becomes one with its original's payload. A first pass over every file indexes what
the second needs (requests' methods, payload digests, traverse_crawl's ``metadata``
records), so files may come in any order; the second streams one record at a time.
Damaged records are skipped and reported (``warc/reader.py``).
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecord

from traverse_crawl.fetch import urls
from traverse_crawl.fetch.content import resolve_content_type
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.utils.javascript import encode_uri_component
from traverse_crawl.warc import import_metadata
from traverse_crawl.warc.payload import PayloadTooLarge, read_payload
from traverse_crawl.warc.reader import Bad, read_records

Source = tuple[str, Callable[[], BinaryIO], int]  # display name, opener, size


Key = tuple[int, int]  # a record: its source's number, its offset
# What reading a file can raise besides damage: a disk's error, a WACZ member's CRC.
_READ_ERRORS = (OSError, zipfile.BadZipFile)


@dataclass
class ImportReport:
    records: int = 0
    # Response, resource and revisit records read to their end undamaged, imported or not
    # (one that holds no HTTP response, a 404): 0 with records skipped is exit status 1.
    whole: int = 0
    imported: int = 0
    skipped: int = 0
    superseded: int = 0
    not_get: int = 0  # responses to a request that was not a GET
    unresolved: int = 0  # revisits whose original is not in the import
    normalised: int = 0  # URLs stored in their normal form, not as written
    unreadable: int = 0  # files (or WACZ members) that could not be read at all
    too_large: int = 0  # payloads larger than the bound (DOWNLOAD_MAXSIZE), raw or decoded
    invalid_metadata: int = 0  # metadata records claiming to be ours, with a wrong field
    warnings: list[str] = field(default_factory=list)


def media_kind(content_type: str | None) -> str | None:
    """The store kind of a media type, or None when the store has no kind for it."""
    value = (content_type or "").split(";", 1)[0].strip().lower()
    kind = resolve_content_type(value)
    if kind != "text":
        return kind
    return "text" if value.startswith("text/") else None


def fetched_at(warc_date: str) -> str:
    """A WARC-Date (seconds or a fraction) as ``Date.prototype.toISOString()``."""
    text = warc_date.strip().rstrip("Z")
    moment = datetime.fromisoformat(text[:26]).replace(tzinfo=timezone.utc)
    return snap.iso_now(moment)


@dataclass(frozen=True)
class _Capture:
    """What the first pass keeps of a ``response``, ``resource`` or ``revisit`` record."""

    key: Key
    rec_type: str
    record_id: str
    concurrent_to: str
    url: str
    date: str
    digest: str
    status: int
    content_type: str | None
    etag: str | None
    last_modified: str | None
    profile: str
    refers_to: str


@dataclass
class _Index:
    """The first pass over every file: what the second needs to resolve and filter."""

    metadata: dict[str, dict[str, str]] = field(default_factory=dict)
    bad_metadata: dict[Key, str] = field(default_factory=dict)  # why each is not used
    # The requests' methods by their record id and the id they are concurrent to
    # (source number, offset, method): ids are not always unique across files.
    methods: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    requests: dict[tuple[int, str], list[tuple[int, str]]] = field(default_factory=dict)
    captures: list[_Capture] = field(default_factory=list)


def _digest(value: str | None) -> str:
    algorithm, _, encoded = (value or "").strip().partition(":")
    return f"{algorithm.lower()}:{encoded.upper()}" if encoded else ""


def _index_record(index: _Index, number: int, record: ArcWarcRecord, offset: int) -> None:
    headers = record.rec_headers
    record_id = str(headers.get_header("WARC-Record-ID") or "")
    concurrent = str(headers.get_header("WARC-Concurrent-To") or "")
    url = str(headers.get_header("WARC-Target-URI") or "")
    if record.rec_type == "metadata":
        fields = import_metadata.read_fields(record)
        if isinstance(fields, str):
            index.bad_metadata[(number, offset)] = fields
        elif concurrent and "pageId" in fields:  # claims to be traverse_crawl's: check it
            problem = import_metadata.problem(fields)
            if problem is None:
                index.metadata[concurrent] = fields
            else:
                index.bad_metadata[(number, offset)] = f"metadata record: {problem}"
        return
    if record.rec_type == "request":
        method = str(record.http_headers.protocol if record.http_headers else "").upper()
        for ref in (record_id, concurrent):
            if ref:
                index.methods.setdefault(ref, []).append((number, offset, method))
        index.requests.setdefault((number, url), []).append((offset, method))
        return
    if record.rec_type not in ("response", "resource", "revisit"):
        return
    http = record.http_headers if record.rec_type != "resource" else None
    if http:
        status = int(http.get_statuscode() or 0)
    else:  # a revisit without HTTP headers takes its original's
        status = 200 if record.rec_type == "resource" else 0
    index.captures.append(
        _Capture(
            key=(number, offset),
            rec_type=record.rec_type,
            record_id=record_id,
            concurrent_to=concurrent,
            url=url,
            date=_date(headers.get_header("WARC-Date")),
            digest=_digest(headers.get_header("WARC-Payload-Digest")),
            status=status,
            content_type=(http or headers).get_header("Content-Type"),
            etag=http.get_header("ETag") if http else None,
            last_modified=http.get_header("Last-Modified") if http else None,
            profile=str(headers.get_header("WARC-Profile") or ""),
            refers_to=str(headers.get_header("WARC-Refers-To") or ""),
        )
    )


def _date(value: str | None) -> str:
    try:
        return fetched_at(str(value or ""))
    except ValueError:
        return ""


def _method(index: _Index, capture: _Capture) -> str:
    """The method of the request a response answered (GET when nothing says)."""
    number, offset = capture.key
    for ref in (capture.record_id, capture.concurrent_to):
        linked = [(o, m) for n, o, m in index.methods.get(ref, []) if n == number]
        if linked:
            return _nearest(linked, offset)
    # Older tools pair the records by URL only: the nearest request of the URL.
    pairs = index.requests.get((number, capture.url))
    return _nearest(pairs, offset) if pairs else "GET"


def _nearest(pairs: list[tuple[int, str]], offset: int) -> str:
    return min(pairs, key=lambda pair: abs(pair[0] - offset))[1]


@dataclass
class _Plan:
    """Which records are not pages, and which originals stand for which revisits."""

    metadata: dict[str, dict[str, str]]
    bad_metadata: dict[Key, str]
    not_get: set[Key] = field(default_factory=set)
    revisits: dict[Key, list[_Capture]] = field(default_factory=dict)
    unresolved: list[_Capture] = field(default_factory=list)


def _plan(index: _Index) -> _Plan:
    plan = _Plan(index.metadata, index.bad_metadata)
    originals: list[_Capture] = []
    for capture in index.captures:
        if _method(index, capture) != "GET":
            plan.not_get.add(capture.key)
        elif capture.rec_type != "revisit":
            originals.append(capture)
    by_id = {c.record_id: c for c in originals if c.record_id}
    by_digest: dict[str, _Capture] = {}
    by_url: dict[str, list[_Capture]] = {}
    for capture in originals:
        if capture.digest:
            by_digest.setdefault(capture.digest, capture)
        if 200 <= capture.status < 300:
            by_url.setdefault(_normal(capture.url) or capture.url, []).append(capture)
    for capture in index.captures:
        if capture.rec_type != "revisit" or capture.key in plan.not_get:
            continue
        if not capture.date:
            plan.unresolved.append(capture)
            continue
        original = by_id.get(capture.refers_to)
        if original is None and "not-modified" in capture.profile:
            earlier = [
                c
                for c in by_url.get(_normal(capture.url) or capture.url, [])
                if c.date <= capture.date
            ]
            original = max(earlier, key=lambda c: c.date) if earlier else None
        elif original is None:
            original = by_digest.get(capture.digest) if capture.digest else None
        if original is None:
            plan.unresolved.append(capture)
        else:
            plan.revisits.setdefault(original.key, []).append(capture)
    return plan


def _normal(url: str) -> str | None:
    return urls.normalize(url)


@dataclass(frozen=True)
class Rejected:
    """A whole record not imported for what it holds (not for damage): the reason."""

    reason: str
    too_large: bool = False


def candidates(
    sources: list[Source],
    source_id: str,
    report: ImportReport,
    progress: Callable[[int], None] = lambda _: None,
    max_payload: int = 0,
) -> Iterator[Snapshot]:
    """Snapshots from ``sources``, one record at a time; every problem is in ``report``.

    A first pass indexes every file (traverse_crawl's metadata, the requests'
    methods, each capture's digest and date), so a revisit finds its original
    whatever the order of the files; the second builds the snapshots. A payload
    is decoded up to ``max_payload`` bytes (0: no bound); a larger one is not imported.
    """
    index = _Index()
    unreadable: set[int] = set()
    for number, (name, opener, size) in enumerate(sources):
        try:
            with opener() as fh:
                for _item in read_records(fh, size, partial(_index_record, index, number)):
                    pass  # reported by the second pass
        except _READ_ERRORS as exc:  # the I/O edge: the other files are still imported
            unreadable.add(number)
            report.unreadable += 1
            report.warnings.append(f"{name}: cannot read: {exc}")
    plan = _plan(index)
    index.captures.clear()  # the plan keeps what the second pass needs
    index.requests.clear()
    if plan.unresolved:
        first = plan.unresolved[0]
        report.unresolved = len(plan.unresolved)
        report.warnings.append(
            f"{sources[first.key[0]][0]}: {len(plan.unresolved)} revisit record(s) whose "
            f"original is not in the import not imported (the first at offset {first.key[1]})"
        )
    prefix = encode_uri_component(source_id) + "::"
    normalised: set[str] = set()

    for number, (name, opener, size) in enumerate(sources):
        if number in unreadable:
            continue

        captures: set[int] = set()  # offsets of this file's response, resource, revisit

        def build(record: ArcWarcRecord, offset: int) -> list[Snapshot] | Rejected:
            report.records += 1
            if record.rec_type in ("response", "resource", "revisit"):
                captures.add(offset)  # noqa: B023
            if report.records % 1000 == 0:
                progress(report.records)
            key = (number, offset)  # noqa: B023
            if key in plan.not_get:
                report.not_get += 1
                return []
            if key in plan.bad_metadata:
                return Rejected(plan.bad_metadata[key])
            try:
                return _snapshots(record, key, plan, prefix, normalised, max_payload)
            except PayloadTooLarge as exc:  # the record is not imported, nor any revisit of it
                url = str(record.rec_headers.get_header("WARC-Target-URI") or "")
                shown = import_metadata.clipped(url, 300)
                return Rejected(f"{shown}: {exc}", too_large=True)

        try:
            yield from _second_pass(name, opener, size, build, report, captures)
        except _READ_ERRORS as exc:
            report.unreadable += 1
            report.warnings.append(f"{name}: cannot read: {exc}")
    report.normalised = len(normalised)


def _second_pass(
    name: str,
    opener: Callable[[], BinaryIO],
    size: int,
    build: Callable[[ArcWarcRecord, int], list[Snapshot] | Rejected],
    report: ImportReport,
    captures: set[int],
) -> Iterator[Snapshot]:
    """One file's snapshots; its problems are added to ``report``. ``captures``: the
    offsets ``build`` saw a response, resource or revisit at."""
    with opener() as fh:
        for item in read_records(fh, size, build):
            report.whole += int(not isinstance(item, Bad) and item.offset in captures)
            if isinstance(item, Bad):
                report.skipped += int(item.skipped)
                what = "skipped record at" if item.skipped else "at"
                report.warnings.append(f"{name}: {what} offset {item.offset}: {item.reason}")
            elif isinstance(item.value, Rejected):
                report.too_large += int(item.value.too_large)
                report.invalid_metadata += int(not item.value.too_large)
                report.warnings.append(
                    f"{name}: skipped record at offset {item.offset}: {item.value.reason}"
                )
            else:
                yield from item.value


def _snapshots(
    record: ArcWarcRecord,
    key: Key,
    plan: _Plan,
    prefix: str,
    normalised: set[str],
    max_payload: int,
) -> list[Snapshot]:
    if record.rec_type not in ("response", "resource"):
        return []
    revisits = plan.revisits.get(key, [])
    own = _importable(record)
    if own is None and not revisits:
        return []
    body = read_payload(record, max_payload)
    headers = record.rec_headers
    out = []
    if own is not None:
        status, content_type, etag, last_modified = own
        built = _build(
            prefix,
            str(headers.get_header("WARC-Target-URI") or ""),
            plan.metadata.get(str(headers.get_header("WARC-Record-ID")), {}),
            fetched_at(str(headers.get_header("WARC-Date"))),
            status,
            content_type,
            etag,
            last_modified,
            body,
            normalised,
        )
        out += [built] if built is not None else []
    original = _capture_of(record)
    for revisit in revisits:
        # An identical-payload revisit keeps its own response headers; a 304's are
        # the original's.
        own_headers = "not-modified" not in revisit.profile and revisit.status
        source = revisit if own_headers else original
        built = _build(
            prefix,
            revisit.url,
            plan.metadata.get(revisit.record_id, {}),
            revisit.date,
            source.status,
            source.content_type or original.content_type,
            source.etag,
            source.last_modified,
            body,
            normalised,
        )
        out += [built] if built is not None else []
    return out


def _capture_of(record: ArcWarcRecord) -> _Capture:
    http = record.http_headers if record.rec_type == "response" else None
    return _Capture(
        key=(0, 0),
        rec_type=record.rec_type,
        record_id="",
        concurrent_to="",
        url="",
        date="",
        digest="",
        status=int(http.get_statuscode() or 0) if http else 200,
        content_type=(http or record.rec_headers).get_header("Content-Type"),
        etag=http.get_header("ETag") if http else None,
        last_modified=http.get_header("Last-Modified") if http else None,
        profile="",
        refers_to="",
    )


def _importable(record: ArcWarcRecord) -> tuple[int, str | None, str | None, str | None] | None:
    capture = _capture_of(record)
    if not 200 <= capture.status < 300:
        return None
    return capture.status, capture.content_type, capture.etag, capture.last_modified


def _build(
    prefix: str,
    url: str,
    ours: dict[str, str],
    date: str,
    status: int,
    content_type: str | None,
    etag: str | None,
    last_modified: str | None,
    body: bytes,
    normalised: set[str],
) -> Snapshot | None:
    kind = media_kind(content_type)
    if not 200 <= status < 300 or kind is None:
        return None
    page = _normal(url)
    if page is None:
        return None  # wget's own log and manifest are resource records of metadata:// URLs
    if page != url:
        normalised.add(url)
    page_url = ours.get("pageId", "").partition("::")[2] or page
    stored_status = ours.get("status")
    return snap.build_snapshot(
        source_id=prefix + page_url,
        url=page,
        status=int(stored_status) if stored_status and stored_status.isdigit() else status,
        content_type=kind,  # type: ignore[arg-type]
        raw_body=body,
        content_type_header=content_type,
        redirects=import_metadata.redirects(ours),
        etag=ours.get("etag") or etag,
        last_modified=ours.get("lastModified") or last_modified,
        rendered=ours.get("rendered") == "true",
        fetched_at=ours.get("fetchedAt") or date,
    )


def file_source(path: str) -> Source:
    return (path, lambda: open(path, "rb"), os.path.getsize(path))
