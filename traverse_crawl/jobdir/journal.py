"""The crawl-state interface and its backends: an append-only journal of plain records.

A crawl's state is the sequence of records it appended (a header, budget changes,
one record per page outcome); ``jobdir/state.py`` rebuilds every seed's
``Frontier`` from them. Records are JSON-able dicts, never pickles. Backends:
``MemoryJournal`` (tests, and the reference) and ``FileJournal`` (``JOBDIR``;
docs/architecture.md, "State and durability").
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from typing import Any, Protocol

from traverse_crawl.utils.atomic import fsync_directory

# The frontier's in-order commit makes the replayed state independent of the order
# in which outcomes were appended, so the journal needs no other synchronisation.
# Hand-written because the durability rules are the design: Scrapy's own JOBDIR
# files are written at a clean close only.
#
# File format: one record per line, ``<crc32 of the JSON, 8 hex digits> <JSON>\n``,
# JSON with ASCII escapes only (no raw newline can occur inside a record). Each
# record is one ``write(2)`` on an ``O_APPEND`` descriptor: once the call returns,
# the record survives a SIGKILL (it is in the kernel's page cache). ``sync()``
# fsyncs; the crawl calls it at least once a second, so power loss costs at most
# the last second. A crash can leave only the *last* line incomplete or torn:
# reading drops such a tail (and ``FileJournal`` truncates it before appending
# again). A bad record anywhere else means the file was damaged, and
# ``JournalError`` names it.
JOURNAL_NAME = "traverse-journal.jsonl"


class JournalError(Exception):
    """A journal that cannot be read: damaged, foreign or unreadable."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class CrawlState(Protocol):
    """Where a crawl's records live. ``records()`` returns what was appended, in order."""

    def records(self) -> list[dict[str, Any]]: ...

    def append(self, record: dict[str, Any]) -> None: ...

    def sync(self) -> None: ...

    def close(self) -> None: ...


class MemoryJournal:
    """The in-memory backend: nothing survives the process."""

    def __init__(self, records: list[dict[str, Any]] | None = None) -> None:
        self._records = list(records or [])

    def records(self) -> list[dict[str, Any]]:
        return list(self._records)

    def append(self, record: dict[str, Any]) -> None:
        self._records.append(json.loads(json.dumps(record)))  # plain data only

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


def encode(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    data = text.encode("ascii")
    return b"%08x %s\n" % (zlib.crc32(data), data)


def decode_lines(path: str, data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of a journal file's bytes, and the length of its intact part.

    Text after the last newline is an append that a crash cut short; a bad last
    line is one that a power loss tore. Both are dropped. A bad line before
    another line is damage.
    """
    records: list[dict[str, Any]] = []
    good = 0
    lines = data.split(b"\n")
    lines.pop()  # after the final newline: empty, or an incomplete append
    for number, line in enumerate(lines):
        record = _decode(line)
        if record is None:
            if number == len(lines) - 1:
                break
            raise JournalError(path, f"record {number + 1} is damaged (bad checksum or JSON)")
        records.append(record)
        good += len(line) + 1
    return records, good


def _decode(line: bytes) -> dict[str, Any] | None:
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = json.loads(body)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def read_file(path: str) -> tuple[list[dict[str, Any]], int]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise JournalError(path, f"cannot be read ({exc.strerror or exc})") from None
    return decode_lines(path, data)


class FileJournal:
    """The ``JOBDIR`` backend: an append-only file of checksummed records."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, JOURNAL_NAME)
        self._records: list[dict[str, Any]] | None = None
        self._intact: int | None = None  # bytes of whole records, once read
        self._fd: int | None = None
        self._dirty = False

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def records(self) -> list[dict[str, Any]]:
        if self._records is None:
            self._records, self._intact = read_file(self.path) if self.exists() else ([], 0)
        return self._records

    def release(self) -> list[dict[str, Any]]:
        """The records read, handed over once: the journal keeps no copy in memory."""
        records = self.records()
        self._records = []
        return records

    def open(self) -> None:
        """Open for appending, dropping a torn last record a crash left behind."""
        if self._fd is not None:
            return
        if self._intact is None:
            self.records()
        size = self._intact or 0
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(self.path, flags, 0o666)
        if os.fstat(fd).st_size != size:
            os.ftruncate(fd, size)
        self._fd = fd
        if size == 0:
            fsync_directory(os.path.dirname(self.path) or ".")

    def append(self, record: dict[str, Any]) -> None:
        if self._fd is None:
            self.open()
        assert self._fd is not None
        data = encode(record)
        written = os.write(self._fd, data)
        if written != len(data):  # a short write (disk full): finish it or fail loudly
            os.write(self._fd, data[written:])
        self._dirty = True

    def sync(self) -> None:
        fd = self._fd
        if fd is not None and self._dirty:
            self._dirty = False
            os.fsync(fd)

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.sync()
            os.close(self._fd)
            self._fd = None
