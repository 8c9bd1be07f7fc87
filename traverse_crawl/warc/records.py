"""WARC 1.1 records and rolling WARC files, built with warcio (docs/web-archives.md).

warcio builds every record and computes its digests (SHA-1, base32, as the WARC tools
and pywb's revisit lookup expect); nothing here writes WARC syntax by hand. What this
module owns is the file life cycle (``RollingWarcFiles``: ``.open`` until complete)
and the compression (one gzip member per record, ISA-L).
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from http import HTTPStatus
from io import BytesIO
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from isal import isal_zlib
from warcio.recordbuilder import RecordBuilder
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.warcwriter import WARCWriter

from traverse_crawl.utils.redact import redact_text

# Each record is one gzip member (warcio and pywb seek to any record), compressed at
# level 1 with ISA-L (``isal``: the same deflate format, about a fifth of zlib level 1's
# CPU for a 22 KB page and a smaller result) rather than warcio's zlib level 9, which
# costs about forty times the CPU (1.7 ms for that page); ``warcio recompress`` makes
# level-9 copies later, off the crawl. Levels above ISA-L's 3 (an export's) use zlib.
GZIP_LEVEL = 1
GZIP_WBITS = zlib.MAX_WBITS + 16  # a gzip header and trailer: one member per record
OPEN_SUFFIX = ".open"
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
Headers = list[tuple[str, str]]

# One builder for record ids, dates and digests (warcio's RecordBuilder).
BUILDER = RecordBuilder(warc_version="1.1")

# C0 controls and DEL: warcio writes header values as they are given, so a CR/LF in a
# stored URL or date (a hand-made or imported snapshot can carry one) would end the
# header and inject others. They are percent-encoded instead, as a URI would have them.
_CONTROLS = {code: f"%{code:02X}" for code in [*range(0x20), 0x7F]}


def header_value(text: str) -> str:
    """``text`` with its control characters percent-encoded: safe as one WARC header
    value or one ``application/warc-fields`` line."""
    return text.translate(_CONTROLS)


def warc_date(moment: datetime | None = None) -> str:
    """A WARC-Date with microseconds (WARC 1.1 allows the fraction)."""
    moment = (moment or datetime.now(timezone.utc)).astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def sha1_digest(data: bytes) -> str:
    """``sha1:<base32>``, the digest form warcio writes and pywb indexes."""
    return _sha1(hashlib.sha1(data))


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def navigation_record(url: str, status: int, headers: Headers, body: bytes) -> dict[str, Any]:
    """What the WARC writer needs of a rendered page's navigation response (as received)."""
    return {"url": url, "status": status, "headers": list(headers), "body": body}


@dataclass(frozen=True)
class Written:
    """What a later record needs to refer to a written one."""

    record_id: str
    date: str
    url: str
    payload_digest: str


def _record(
    url: str,
    kind: str,
    http: StatusAndHeaders | None,
    body: bytes,
    date: str,
    extra: dict[str, str] | None = None,
    content_type: str = "",
) -> ArcWarcRecord:
    url = header_value(url)
    headers = {
        name: header_value(value) for name, value in {"WARC-Date": date, **(extra or {})}.items()
    }
    # The digests warcio would compute (SHA-1, base32), with hashlib directly:
    # warcio's builder and writer each re-read the payload in 16 KB chunks
    # through Python code, and hash a record without HTTP headers twice.
    # warcio keeps digests it is given.
    payload = hashlib.sha1(body)
    block = payload
    if http is not None:
        http.compute_headers_buffer()
        block = hashlib.sha1(http.headers_buff or b"")
        block.update(body)
    headers["WARC-Payload-Digest"] = _sha1(payload)
    headers["WARC-Block-Digest"] = _sha1(block)
    return BUILDER.create_warc_record(
        url,
        kind,
        payload=BytesIO(body),
        length=len(body),
        http_headers=http,
        warc_headers_dict=headers,
        warc_content_type=content_type,
    )


def _sha1(digest: Any) -> str:
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")  # as warcio's Digester


def request_record(
    url: str, method: str, headers: Headers, body: bytes, date: str, concurrent_to: str
) -> ArcWarcRecord:
    """The request as sent: request line, headers (``Host`` first if missing), body."""
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not any(name.lower() == "host" for name, _ in headers):
        headers = [("Host", parts.netloc), *headers]
    http = StatusAndHeaders(f"{method} {target} HTTP/1.1", headers, is_http_request=True)
    return _record(url, "request", http, body, date, {"WARC-Concurrent-To": concurrent_to})


def _status_and_headers(status: int, protocol: str, headers: Headers) -> StatusAndHeaders:
    """A response's status line and headers as warcio writes them."""
    statusline = f"{status} {reason_phrase(status)}".rstrip()
    return StatusAndHeaders(statusline, headers, protocol=protocol or "HTTP/1.1")


def response_record(
    url: str,
    status: int,
    protocol: str,
    headers: Headers,
    body: bytes,
    date: str,
    extra: dict[str, str] | None = None,
) -> ArcWarcRecord:
    """A response as received: status line, headers, payload before content decoding."""
    http = _status_and_headers(status, protocol, headers)
    return _record(url, "response", http, body, date, extra)


def revisit_record(
    url: str,
    status: int,
    protocol: str,
    headers: Headers,
    date: str,
    earlier: Written,
    extra: dict[str, str] | None = None,
) -> ArcWarcRecord:
    """A 304 to a conditional GET: profile server-not-modified, pointing at ``earlier``."""
    http = _status_and_headers(status, protocol, headers)
    record = BUILDER.create_revisit_record(
        header_value(url),
        earlier.payload_digest,
        header_value(earlier.url),
        earlier.date,
        http_headers=http,
        warc_headers_dict={
            name: header_value(value)
            for name, value in {"WARC-Date": date, **(extra or {})}.items()
        },
    )
    record.rec_headers.replace_header("WARC-Profile", SERVER_NOT_MODIFIED)
    return record


def metadata_record(url: str, fields: dict[str, Any], date: str, refers_to: str) -> ArcWarcRecord:
    """A ``metadata`` record of ``application/warc-fields`` lines."""
    block = "".join(
        f"{name}: {header_value(str(value))}\r\n" for name, value in fields.items() if value
    )
    extra = {"WARC-Concurrent-To": refers_to} if refers_to else {}
    return _record(url, "metadata", None, block.encode("utf-8"), date, extra)


def resource_record(
    url: str, content_type: str, body: bytes, date: str, extra: dict[str, str]
) -> ArcWarcRecord:
    return _record(url, "resource", None, body, date, extra, content_type=content_type)


def warcinfo_record(filename: str, info: dict[str, str]) -> ArcWarcRecord:
    return BUILDER.create_warcinfo_record(filename, info)


def new_record_id() -> str:
    """``<urn:uuid:...>``, as warcio makes them (for a record built later)."""
    return str(StatusAndHeadersParser.make_warc_id())


def record_id(record: ArcWarcRecord) -> str:
    return str(record.rec_headers.get_header("WARC-Record-ID"))


def serialize(record: ArcWarcRecord, level: int = GZIP_LEVEL) -> bytes:
    """One record as one gzip member: warcio writes it, ISA-L (or zlib) compresses it.

    zlib's window and hash table are sized to the record: its full-size state
    costs more to set up than compressing a request record does.
    """
    plain = BytesIO()
    WARCWriter(plain, gzip=False).write_record(record)
    data = plain.getvalue()
    if level <= isal_zlib.ISAL_BEST_COMPRESSION:
        return bytes(isal_zlib.compress(data, level, GZIP_WBITS))
    window = min(zlib.MAX_WBITS, max(9, (len(data) - 1).bit_length()))
    compressor = zlib.compressobj(level, zlib.DEFLATED, window + 16, max(1, min(8, window - 7)))
    return compressor.compress(data) + compressor.flush()


def written(record: ArcWarcRecord) -> Written:
    headers = record.rec_headers
    return Written(
        record_id=record_id(record),
        date=str(headers.get_header("WARC-Date")),
        url=str(headers.get_header("WARC-Target-URI") or ""),
        payload_digest=str(headers.get_header("WARC-Payload-Digest") or ""),
    )


class RollingWarcFiles:
    """Append records to ``<prefix>-<start>-<serial>.warc.gz``, rolling at ``max_size``.

    Every file starts with a ``warcinfo`` record made of ``info``. Records
    passed to one ``write`` call stay in one file (a request with its response).
    Records go to ``<name>.warc.gz.open``; a file is closed (flushed, fsynced) and
    renamed to ``<name>.warc.gz`` once it passes the size limit or at the end of the
    crawl, so a finished name is always a complete file; a SIGKILL leaves at most one
    ``.open`` file whose last record may be cut (``warcio check`` names it).
    """

    def __init__(
        self, directory: str, prefix: str, max_size: int, info: dict[str, str], pid: int = 0
    ) -> None:
        self.directory = directory
        self.max_size = max_size
        self.info = info
        pid = pid or os.getpid()  # the crawl's, when another process writes for it
        self.stem = f"{prefix}-{datetime.now(timezone.utc):%Y%m%d%H%M%S}-{pid}"
        self.serial = 0
        self.handle: BinaryIO | None = None
        self.path = ""
        self.size = 0
        self.closed_files: list[str] = []

    def _open(self) -> BinaryIO:
        os.makedirs(self.directory, exist_ok=True)
        while True:  # a writer started after one that died in the same second: its next name
            name = f"{self.stem}-{self.serial:05d}.warc.gz"
            self.serial += 1
            self.path = os.path.join(self.directory, name)
            if not any(os.path.exists(self.path + end) for end in ("", OPEN_SUFFIX)):
                break
        handle: BinaryIO = open(self.path + OPEN_SUFFIX, "xb")
        self.handle = handle
        self.size = 0
        self._append(handle, serialize(warcinfo_record(name, self.info)))
        return handle

    def _append(self, handle: BinaryIO, data: bytes) -> None:
        handle.write(data)
        self.size += len(data)

    def write(self, *records: ArcWarcRecord) -> None:
        handle = self.handle or self._open()
        self._append(handle, b"".join(serialize(record) for record in records))
        if self.size >= self.max_size:
            self.close()

    def close(self) -> None:
        """Flush, fsync and rename the open file (no-op when none is open)."""
        handle, self.handle = self.handle, None
        if handle is None:
            return
        try:
            handle.flush()
            os.fsync(handle.fileno())
        finally:
            handle.close()
        os.replace(self.path + OPEN_SUFFIX, self.path)
        self.closed_files.append(self.path)


def info_fields(software: str, settings: dict[str, Any]) -> dict[str, str]:
    """The ``warcinfo`` block: software, format, and the settings that shape the crawl
    (a URL's password in a value masked: the block is read by anyone given the file)."""
    fields = {
        "software": software,
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
    }
    fields.update({name: redact_text(str(value)) for name, value in settings.items()})
    return fields
