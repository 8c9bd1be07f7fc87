"""Where a seed's committed pages wait for its manifest, and the manifest's streaming writer.

A crawl's memory must not grow with its pages: the page objects and their warnings
are needed only when the manifest is written, so they wait in a ``Spool`` on disk
(``PageList`` keeps them in memory: the reference). ``dump_manifest`` writes a
manifest byte for byte as ``json.dump(manifest, indent=2, ensure_ascii=False)``
would, from iterators, so no manifest is ever whole in memory.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring as _string
from typing import IO, Any, Protocol

SPILL_BYTES = 32 * 1024  # a seed's encoded pages held in memory before a spill


class PageLog(Protocol):
    """A seed's committed pages, in commit (BFS) order, with their warnings."""

    def commit(self, page: dict[str, Any], warnings: list[str]) -> None: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[dict[str, Any]]: ...

    def warnings(self) -> Iterator[tuple[int, list[str]]]:
        """``(page index, its warnings)`` for each page that has any, in order."""
        ...


class PageList(list[dict[str, Any]]):
    """Committed pages in memory (the reference; tests compare it as a list)."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[tuple[int, list[str]]] = []

    def commit(self, page: dict[str, Any], warnings: list[str]) -> None:
        if warnings:
            self.notes.append((len(self), warnings))
        self.append(page)

    def warnings(self) -> Iterator[tuple[int, list[str]]]:
        return iter(self.notes)


def encode(value: Any) -> bytes:
    # ASCII escapes: one line per value, and lone surrogates survive the round trip.
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


class Spool:
    """One crawl's spill file, shared by its seeds; created at the first spill.

    Each seed's pages are encoded as they commit, held in a small buffer, and
    spilled in chunks to one anonymous file (``tempfile.TemporaryFile`` in the
    manifest directory: unlinked at creation, so a crash leaves nothing that could
    be taken for a manifest, and on the manifest's disk rather than a RAM-backed
    ``/tmp``). Only the chunks' offsets stay in memory. If the file cannot be
    written (a full disk), the pages stay in memory from then on: the crawl and
    its manifest are unchanged.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._file: IO[bytes] | None = None
        self._end = 0
        self.failed: OSError | None = None  # set once: nothing is spilled after

    def pages(self) -> SpooledPages:
        return SpooledPages(self)

    def write(self, data: bytes) -> tuple[int, int] | None:
        """Append ``data``; its (offset, length), or None when it stays in memory."""
        if self.failed is not None:
            return None
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(dir=self.directory, prefix=".spool-")
            fd, at, view = self._file.fileno(), self._end, memoryview(data)
            while view:
                done = os.pwrite(fd, view, at)
                view, at = view[done:], at + done
        except OSError as exc:
            self.failed = exc
            return None
        chunk = (self._end, len(data))
        self._end += len(data)
        return chunk

    def read(self, offset: int, length: int) -> bytes:
        assert self._file is not None
        parts, fd = [], self._file.fileno()
        while length > 0:
            part = os.pread(fd, length, offset)
            if not part:
                raise OSError(f"spool file ends at {offset}, {length} bytes short")
            parts.append(part)
            offset, length = offset + len(part), length - len(part)
        return b"".join(parts)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()  # the file was never linked: this frees its space
            self._file = None


class Lines:
    """Encoded values: the spilled chunks, then the buffer still in memory."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.chunks: list[tuple[int, int]] = []
        self.buffer: list[bytes] = []
        self.size = 0

    def add(self, value: Any) -> None:
        line = encode(value)
        self.buffer.append(line)
        self.size += len(line)
        if self.size >= SPILL_BYTES:
            chunk = self.spool.write(b"".join(self.buffer))
            if chunk is not None:
                self.chunks.append(chunk)
                self.buffer, self.size = [], 0

    def __iter__(self) -> Iterator[Any]:
        for offset, length in self.chunks:
            data = self.spool.read(offset, length)
            for line in data.split(b"\n")[:-1]:
                yield json.loads(line)
        for line in self.buffer:
            yield json.loads(line)


class SpooledPages:
    """A seed's committed pages in the crawl's ``Spool``: memory stays flat."""

    def __init__(self, spool: Spool) -> None:
        self._pages = Lines(spool)
        self._warnings = Lines(spool)
        self._count = 0

    def commit(self, page: dict[str, Any], warnings: list[str]) -> None:
        if warnings:
            self._warnings.add([self._count, warnings])
        self._pages.add(page)
        self._count += 1

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._pages)

    def warnings(self) -> Iterator[tuple[int, list[str]]]:
        return ((index, found) for index, found in self._warnings)


def manifest_warnings(frontier: Any) -> Iterator[str]:
    """A frontier's manifest warnings: each page's in BFS order (a store failure
    first, the sitemaps' with the seed's step), then how the crawl ended."""
    count = len(frontier.pages)
    store = ((i, 0, [w]) for i, w in sorted(frontier.store_warnings.items()) if i < count)
    pages = ((i, 1, found) for i, found in frontier.pages.warnings())
    sitemaps = (
        [(0, 2, frontier.sitemap_warnings)] if count and frontier.sitemap_urls is not None else []
    )
    for _, _, found in heapq.merge(store, pages, sitemaps):
        yield from found
    end = end_warning(frontier)
    if end is not None:
        yield end


def end_warning(frontier: Any) -> str | None:
    """How a seed's crawl ended, when it did not end by finishing its queue."""
    remaining = frontier.remaining
    if frontier.stop_reason is not None:
        # Fetched pages waiting for an earlier one are on disk (their
        # snapshots) but not in the manifest: count them apart.
        waiting = len(frontier.pending)
        return (
            f"crawl stopped before this seed finished ({frontier.stop_reason}); "
            f"{len(frontier.pages)} page(s) recorded, "
            f"{waiting} fetched but waiting for an earlier page, "
            f"{remaining - waiting} URL(s) discovered but not fetched"
        )
    if remaining > 0:
        return (
            f"maxPages cap ({frontier.max_pages}) reached; "
            f"{remaining} further URL(s) discovered but not fetched"
        )
    return None


def indented(obj: Any, pad: str = "\n") -> str:
    """``json.dumps(obj, indent=2, ensure_ascii=False)`` with ``pad`` for each newline.

    Python's JSON encoder has no C path with an indent: its generators cost 19 µs
    a page object, half the time a replay spent writing its manifest. This is the
    same text, made with the encoder's own string escaper
    and number formats; a key that is not a string goes to ``json.dumps``.
    """
    if isinstance(obj, str):
        return _string(obj)
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, int):
        return int.__repr__(obj)
    if isinstance(obj, float):
        return _float(obj)
    inner = pad + "  "
    if isinstance(obj, list | tuple):
        if not obj:
            return "[]"
        return "[" + inner + ("," + inner).join([indented(v, inner) for v in obj]) + pad + "]"
    if isinstance(obj, dict) and all(isinstance(key, str) for key in obj):
        if not obj:
            return "{}"
        items = [_string(key) + ": " + indented(v, inner) for key, v in obj.items()]
        return "{" + inner + ("," + inner).join(items) + pad + "}"
    return json.dumps(obj, indent=2, ensure_ascii=False).replace("\n", pad)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def dump_manifest(
    out: IO[str],
    head: dict[str, Any],
    pages: Iterable[dict[str, Any]],
    warnings: Iterable[str],
    truncated: bool,
) -> None:
    """``json.dump({**head, "pages", "warnings", "truncated"}, out, indent=2,
    ensure_ascii=False)``, byte for byte, streaming ``pages`` and ``warnings``.

    Hand-written because the JSON encoder can only stream a document that is
    already in memory.

    With an indent, JSON text holds a newline only between tokens (one inside a
    string is escaped), so a value nested ``n`` levels deep is its own indented
    text with two more spaces per level after each newline.
    """

    def value(obj: Any, level: int) -> str:
        return indented(obj, "\n" + "  " * level)

    out.write("{")
    for key, obj in head.items():
        out.write(f"\n  {value(key, 0)}: {value(obj, 1)},")
    for key, items in (("pages", pages), ("warnings", warnings)):
        out.write(f"\n  {value(key, 0)}: [")
        separator = "\n    "
        for item in items:
            out.write(separator + value(item, 2))
            separator = ",\n    "
        out.write("]," if separator == "\n    " else "\n  ],")
    out.write(f'\n  "truncated": {value(truncated, 0)}\n}}')
