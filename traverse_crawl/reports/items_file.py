"""Read items files back for ``scrapy diff --items`` and ``scrapy report`` (docs/reports.md).

An items file holds one extracted item per line, a JSON object with ``type``,
``url``, ``fields`` and ``missing`` among its keys (docs/reports.md, "Items").
An argument is an items file or a directory of them (every ``*.jsonl`` directly
inside it, but a manifest's ``.skipped.jsonl``). A file that cannot be opened is an
``ItemsError`` naming it, so a command can print one line and exit 2; a line that
is not an item is skipped with a one-line warning, at most ``MAX_WARNINGS`` per file.

Files are read line by line with a cap on the line length, never whole: a hostile
or truncated file costs at most ``MAX_LINE_BYTES`` of memory at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

DEFAULT_ITEMS_DIR = ".traverse/items"  # TRAVERSE_ITEMS_DIR's default (docs/settings.md)
MAX_LINE_BYTES = 64 * 2**20  # one item's line: past this, the line is skipped
MAX_WARNINGS = 10  # warning lines per file; the rest are counted in one more line
MAX_DEPTH = 100  # nesting of a field value (an extracted value is a scalar or a list of them)
CHUNK = 2**20  # bytes read at a time while skipping the rest of an over-long line

Item = dict[str, Any]
Warn = Callable[[str], None]


class ItemsError(Exception):
    """One input that cannot be read as items: ``str()`` names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


def items_path(manifest: str) -> str:
    """``<name>.jsonl`` beside the manifest ``<name>.json``: the seed's items file name."""
    return manifest.removesuffix(".json") + ".jsonl"


def is_items_name(name: str) -> bool:
    return name.endswith(".jsonl") and not name.endswith(".skipped.jsonl")


def items_files(arguments: list[str]) -> list[str]:
    """Every items file named by ``arguments``, in argument then file-name order."""
    out: list[str] = []
    for argument in arguments:
        if os.path.isdir(argument):
            try:
                names = sorted(n for n in os.listdir(argument) if is_items_name(n))
            except OSError as exc:
                raise ItemsError(argument, f"cannot list: {exc.strerror or exc}") from None
            if not names:
                raise ItemsError(argument, "directory holds no items file (*.jsonl)")
            out.extend(os.path.join(argument, name) for name in names)
        else:
            try:
                with open(argument, "rb"):
                    pass
            except OSError as exc:
                raise ItemsError(argument, f"cannot read: {exc.strerror or exc}") from None
            if not os.path.isfile(argument):  # items are read again by offset: no pipe
                raise ItemsError(argument, "not a regular file")
            out.append(argument)
    return out


def item_problem(data: Any) -> str | None:
    """What keeps ``data`` from being an item, or None.

    As strict as the readers need (``type`` and ``url`` strings, ``fields`` an
    object, ``missing`` a list of strings when present); other keys are not read.
    """
    if not isinstance(data, dict):
        return "not a JSON object"
    for key in ("type", "url"):
        if not isinstance(data.get(key), str):
            return f"no {key}"
    if not isinstance(data.get("fields"), dict):
        return "no fields object"
    if _deeper_than(data["fields"], MAX_DEPTH):
        return f"fields nested deeper than {MAX_DEPTH} levels"
    missing = data.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) for m in missing):
        return "missing is not a list of strings"
    return None


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects nest past ``limit`` levels: without recursion, so
    that a hostile value can neither exhaust the stack here nor later, when the
    readers compare or print it (``json.dumps`` recurses)."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)):
            if depth > limit:
                return True
            stack.extend(
                (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
            )
    return False


def parse_line(raw: bytes) -> Item | str:
    """The item on one line, or why there is none."""
    try:
        data = json.loads(raw.rstrip(b"\r\n").decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8"
    except ValueError as exc:
        return f"not JSON ({exc})"
    except RecursionError:
        return "nested too deeply to read"
    problem = item_problem(data)
    return problem if problem is not None else data


@dataclass(frozen=True)
class Line:
    """One item and where its line starts, to read it again later (``read_at``)."""

    offset: int
    number: int  # 1-based line number
    item: Item


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, int, bytes | None]]:
    """(offset, line number, the line or None when it is longer than the cap)."""
    offset = number = 0
    while True:
        raw = handle.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        start, offset = offset, offset + len(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):  # skip the rest, a chunk at a time
                raw = handle.readline(CHUNK)
                offset += len(raw)
            yield start, number, None
            continue
        yield start, number, raw


def scan(handle: IO[bytes]) -> Iterator[Line | str]:
    """Each line of an open items file: its item, or why it is not one. Blank lines
    (a trailing newline, a hand-edited file) are skipped silently."""
    for offset, number, raw in _lines(handle):
        if raw is None:
            yield f"{number}: longer than {MAX_LINE_BYTES} bytes"
        elif raw.strip():
            parsed = parse_line(raw)
            yield (
                Line(offset, number, parsed) if isinstance(parsed, dict) else f"{number}: {parsed}"
            )


def read_items(path: str, warn: Warn | None) -> Iterator[Line]:
    """The items of one file in line order.

    ``warn`` gets one line per line that is not an item (``FILE:LINE: reason``), at
    most ``MAX_WARNINGS``, then one line counting the rest. ``None``: no warnings (a
    second pass over a file already reported). A file that cannot be read after
    ``items_files`` checked it (removed meanwhile) is a warning and reads as empty.
    """
    bad = 0
    try:
        handle = open(path, "rb")
    except OSError as exc:
        if warn is not None:
            warn(f"{path}: cannot read: {exc.strerror or exc}")
        return
    with handle:
        for entry in scan(handle):
            if isinstance(entry, Line):
                yield entry
                continue
            bad += 1
            if warn is not None and bad <= MAX_WARNINGS:
                warn(f"{path}:{entry.replace(': ', ': not an item: ', 1)}; line skipped")
    if warn is not None and bad > MAX_WARNINGS:
        warn(f"{path}: {bad - MAX_WARNINGS} more line(s) that are not items skipped")


class ItemReader:
    """Reads single items again by file and offset, keeping one file open at a time
    (output goes file by file, so the same handle serves a run of items)."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._open: tuple[int, IO[bytes]] | None = None

    def read_at(self, file: int, offset: int) -> Item | None:
        """The item whose line starts at ``offset``; None if it is no longer one."""
        try:
            if self._open is None or self._open[0] != file:
                self.close()
                self._open = (file, open(self.paths[file], "rb"))
            handle = self._open[1]
            handle.seek(offset)
            raw = handle.readline(MAX_LINE_BYTES + 1)
        except OSError:
            return None
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            return None
        parsed = parse_line(raw)
        return parsed if isinstance(parsed, dict) else None

    def close(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None
