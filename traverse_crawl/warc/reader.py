"""Read WARC and ARC files record by record, surviving damage (docs/web-archives.md).

warcio parses the records (ARC ones converted to WARC records); this module decides
what a damaged file means. warcio stops quietly at a record cut short and reads a
file that is not an archive as ARC lines, so each file is checked here, and reading
resumes after each bad record. warcio's own console warnings are turned into ours.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO, Generic, TypeVar

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

from traverse_crawl.warc.import_metadata import clipped

GZIP_MAGIC = b"\x1f\x8b\x08"
WARC_MAGIC = b"WARC/1."
_CHUNK = 1 << 20
# An ARC v1 record's first line: URL IP-address Archive-date Content-type Archive-length.
# As warcio (and so pywb) reads one: a date of more than 14 digits is cut to 14, and a
# length that is not one (``-1`` in pywb's sample ``bad.arc``) still starts a record,
# which ``_bad_length`` then names as bad, so reading goes on after it.
_ARC_LINE = re.compile(rb"^\S+://\S* \S+ \d{14}\d* \S+ \S+\s*$", re.MULTILINE)
_WARCIO_OFFSET = re.compile(r"Offset: (\d+)")

T = TypeVar("T")


@dataclass(frozen=True)
class Bad:
    """A record that was not read (``skipped``), or a problem with the file itself."""

    offset: int
    reason: str
    skipped: bool = True


@dataclass(frozen=True)
class Good(Generic[T]):
    offset: int
    value: T


class _OneMember(Exception):
    """The gzip member goes on past its first record: the file is one gzip stream."""


class _Iterator(ArchiveIterator):  # type: ignore[misc]
    def _raise_invalid_gzip_err(self) -> None:
        raise _OneMember


def _is_record_head(head: bytes) -> bool:
    head = head.lstrip(b"\r\n")
    if head.startswith(WARC_MAGIC):
        return True
    first = head.split(b"\n", 1)[0]
    return _ARC_LINE.match(first) is not None


def _starts_a_record(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    head = fh.read(4096)
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(zlib.MAX_WBITS + 16).decompress(head, 512)
        except zlib.error:
            return False
    return _is_record_head(head)


def _next_start(fh: BinaryIO, after: int, gzipped: bool) -> int | None:
    """The next offset past ``after`` where a record can begin, or None."""
    # A plain ARC record has no magic of its own: look for a line starting a URL.
    magics = (GZIP_MAGIC,) if gzipped else (WARC_MAGIC, b"\nhttp", b"\nfiledesc")
    position = after + 1
    while True:
        fh.seek(position)
        chunk = fh.read(_CHUNK + 16)
        if not chunk:
            return None
        hits = [(found, magic) for magic in magics if (found := chunk.find(magic)) >= 0]
        if hits:
            found, magic = min(hits)
            start = position + found + (1 if magic.startswith(b"\n") else 0)
            if _starts_a_record(fh, start):
                return start
            position += found + 1
            continue
        if len(chunk) <= 16:
            return None
        position += _CHUNK


class _Quiet:
    """Runs warcio's steps with its console warnings captured, as ``Bad`` notices."""

    def __init__(self) -> None:
        self.notices: list[Bad] = []

    def call(self, step: Callable[[], T]) -> T:
        captured = io.StringIO()
        logged = logging.StreamHandler(captured)
        logger = logging.getLogger("warcio")
        propagate, logger.propagate = logger.propagate, False
        logger.addHandler(logged)
        try:
            with redirect_stderr(captured):
                return step()
        finally:
            logger.removeHandler(logged)
            logger.propagate = propagate
            text = captured.getvalue()
            if "Replacing spaces" in text:
                self.notices.append(
                    Bad(-1, "spaces in its WARC-Target-URI replaced by %20", skipped=False)
                )
            elif text.strip():
                found = _WARCIO_OFFSET.search(text)
                self.notices.append(
                    Bad(
                        int(found.group(1)) if found else 0,
                        "record not followed by a blank line (its Content-Length may be wrong)",
                        skipped=False,
                    )
                )

    def drain(self, offset: int) -> Iterator[Bad]:
        """The notices so far; one with no offset of its own is the record's at ``offset``."""
        while self.notices:
            notice = self.notices.pop(0)
            yield notice if notice.offset >= 0 else Bad(offset, notice.reason, notice.skipped)


def _bad_length(record: ArcWarcRecord) -> str | None:
    """Why the record's length (an ARC line's Archive-length, a WARC Content-Length) is
    not one, naming the record by its type and URL (an ARC file's ``filedesc`` line, a
    ``warcinfo`` record, by its file name); None when it is a whole number."""
    headers = record.rec_headers
    length = headers.get_header("Content-Length")
    if length is None or length.strip().isdigit():
        return None
    name = headers.get_header("WARC-Target-URI") or headers.get_header("WARC-Filename") or ""
    return (
        f"{record.rec_type} record {clipped(name, 300)!r}: its length "
        f"{clipped(length, 40)!r} is not a whole number"
    )


def _torn(record: ArcWarcRecord) -> bool:
    """Whether the record's block ended before its Content-Length."""
    return int(getattr(record.raw_stream, "limit", 0) or 0) > 0


# A stretch that does not start a WARC or ARC record (after gzip), a record that fails
# to parse, is cut short or whose digest does not match, and bytes left after the last
# record are each one *bad* record, named by its offset. Reading then resumes at the
# next place a record can start (a gzip member header in a ``.gz`` file, ``WARC/1.`` or
# an ARC URL line otherwise), so the records after the damage are still read.
def read_records(
    fh: BinaryIO, size: int, build: Callable[[ArcWarcRecord, int], T]
) -> Iterator[Good[T] | Bad]:
    """``Good(offset, build(record, offset))`` for each whole record; ``Bad`` for the rest.

    ``build`` must read what it needs of the record's content before it returns (the
    stream moves on); an exception it raises makes the record bad. A record is good
    only once it has been read to its end.
    """
    fh.seek(0)
    gzipped = fh.read(3) == GZIP_MAGIC
    quiet = _Quiet()
    offset: int | None = 0
    while offset is not None and offset < size:
        if not _starts_a_record(fh, offset):
            yield Bad(offset, "not a WARC record")
            offset = _next_start(fh, offset, gzipped)
            continue
        fh.seek(offset)
        # Offsets are absolute: warcio starts counting at the handle's position.
        iterator = _Iterator(fh, check_digests="raise", arc2warc=True)
        read = 0
        current = offset
        try:
            while True:
                record = quiet.call(partial(next, iterator, None))
                yield from quiet.drain(iterator.offset)
                if record is None:
                    break
                current = iterator.offset
                bad = _bad_length(record)
                if bad is not None:
                    # Read as warcio reads it (no content), reported, never built; warcio
                    # goes on at the next record, or fails there and resumes below.
                    quiet.call(partial(iterator.read_to_end, record))
                    yield from quiet.drain(current)
                    yield Bad(current, bad)
                    continue
                value = build(record, current)
                quiet.call(partial(iterator.read_to_end, record))
                yield from quiet.drain(current)
                if _torn(record):
                    raise EOFError("cut short inside the record")
                read += 1
                yield Good(current, value)
            end = iterator.offset
        except _OneMember:
            yield Bad(
                offset,
                "one gzip member holds many records (pywb cannot index it; "
                "`warcio recompress` rewrites it): read sequentially",
                skipped=False,
            )
            fh.seek(offset)
            yield from _sequential(fh, build, read, quiet)
            return
        except Exception as exc:  # warcio's and zlib's errors, a bad digest: the record is bad
            current = max(current, iterator.offset)
            yield Bad(current, _reason(exc))
            offset = _next_start(fh, current, gzipped)
            continue
        fh.seek(end)
        if fh.read(_CHUNK).strip(b"\r\n"):
            yield Bad(end, "truncated or malformed record")
            offset = _next_start(fh, end, gzipped)
        else:
            offset = None


def _sequential(
    fh: BinaryIO, build: Callable[[ArcWarcRecord, int], T], done: int, quiet: _Quiet
) -> Iterator[Good[T] | Bad]:
    """The records of a gzip stream, read from its start; the first ``done`` were read.

    Offsets here count decompressed bytes; the stream cannot be resumed after damage.
    """
    stream = gzip.GzipFile(fileobj=fh, mode="rb")
    iterator = ArchiveIterator(stream, check_digests="raise", arc2warc=True)
    seen = 0
    current = 0
    try:
        while True:
            record = quiet.call(partial(next, iterator, None))
            yield from quiet.drain(iterator.offset)
            if record is None:
                return
            current = iterator.offset
            seen += 1
            bad = _bad_length(record)
            if bad is not None:
                quiet.call(partial(iterator.read_to_end, record))
                yield from quiet.drain(current)
                if seen > done:
                    yield Bad(current, bad)
                continue
            value = build(record, current) if seen > done else None
            quiet.call(partial(iterator.read_to_end, record))
            yield from quiet.drain(current)
            if _torn(record):
                raise EOFError("cut short inside the record")
            if seen > done:
                yield Good(current, value)  # type: ignore[arg-type]
    except Exception as exc:  # as above; nothing after damage in one stream can be found
        yield Bad(current, f"{_reason(exc)} (offset in the decompressed stream)")


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
