"""Read WARC files record by record, surviving damage (docs/web-archives.md).

warcio parses the records; this module decides what a damaged file means. warcio
stops quietly at a record cut short and reads a file that is not a WARC as ARC
lines, so each file is checked here, and reading resumes after each bad record.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord

GZIP_MAGIC = b"\x1f\x8b\x08"
WARC_MAGIC = b"WARC/1."
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Bad:
    offset: int
    reason: str


Handler = Callable[[ArcWarcRecord, int], None]


def _starts_a_record(fh: BinaryIO, offset: int) -> bool:
    fh.seek(offset)
    head = fh.read(4096)
    if head.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(zlib.MAX_WBITS + 16).decompress(head, 16)
        except zlib.error:
            return False
    return head.lstrip(b"\r\n").startswith(WARC_MAGIC)


def _next_start(fh: BinaryIO, after: int, gzipped: bool) -> int | None:
    """The next offset past ``after`` where a record can begin, or None."""
    magic = GZIP_MAGIC if gzipped else WARC_MAGIC
    position = after + 1
    while True:
        fh.seek(position)
        chunk = fh.read(_CHUNK + len(magic))
        if not chunk:
            return None
        found = chunk.find(magic)
        if found >= 0 and _starts_a_record(fh, position + found):
            return position + found
        if found >= 0:
            position += found + 1
            continue
        if len(chunk) <= len(magic):
            return None
        position += _CHUNK


# A stretch that does not start with ``WARC/`` (after gzip), a record that fails to
# parse or whose digest does not match, and bytes left after the last record are each
# one *bad* record, named by its offset. Reading then resumes at the next place a
# record can start (a gzip member header in a ``.gz`` file, ``WARC/1.`` otherwise), so
# the records after the damage are still read.
def read_records(fh: BinaryIO, size: int, handle: Handler) -> Iterator[Bad]:
    """Call ``handle(record, offset)`` for each good record; yield each bad one.

    ``handle`` must read what it needs of the record's content before it
    returns (the stream moves on); an exception it raises makes the record bad.
    """
    fh.seek(0)
    gzipped = fh.read(3) == GZIP_MAGIC
    offset: int | None = 0
    while offset is not None and offset < size:
        if not _starts_a_record(fh, offset):
            yield Bad(offset, "not a WARC record")
            offset = _next_start(fh, offset, gzipped)
            continue
        fh.seek(offset)
        # Offsets are absolute: warcio starts counting at the handle's position.
        iterator = ArchiveIterator(fh, check_digests="raise")
        try:
            for record in iterator:
                if record.format != "warc":
                    raise ValueError("not a WARC record")
                handle(record, iterator.offset)
                iterator.read_to_end(record)
            end = iterator.offset
        except Exception as exc:  # warcio's and zlib's errors, a bad digest: the record is bad
            current = max(offset, iterator.offset)
            yield Bad(current, _reason(exc))
            offset = _next_start(fh, current, gzipped)
            continue
        fh.seek(end)
        if fh.read(_CHUNK).strip(b"\r\n"):
            yield Bad(end, "truncated or malformed record")
            offset = _next_start(fh, end, gzipped)
        else:
            offset = None


def _reason(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
