"""What changed in the extracted data between two crawls (``scrapy diff --items``).

Items are matched by ``type`` and ``url`` and their order among the items of that
type on that URL (``index``, from 0: the second ``card`` of a page is ``card[1]``).
An item is ``added`` (only in NEW), ``removed`` (only in OLD), ``changed`` (another
value of some field: ``fields`` compared as JSON values) or ``unchanged``; its
``sourceRef``, ``evidence`` and ``extractor`` are not compared, since every
recapture of an unchanged page gives another ``sourceRef``.

Bounded on any input (docs/reports.md): OLD is read once into an index of fixed-size
records (a digest of each item's key and fields, and where its line is); NEW is
streamed against it; only where the non-unchanged items are is kept, and their
values are read again, one line at a time, while the output is written
(``to_text``, ``to_json`` yield it piece by piece). No whole file, and no field
value of an unchanged item, is ever held.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from traverse_crawl.reports.items_file import Item, ItemReader, Warn, read_items

KINDS = ("added", "removed", "changed", "unchanged")  # the order of counts and sections
MAX_VALUE = 160  # characters of one value in the text output
MAX_FIELDS = 50  # fields shown per item in the text output

_LOCATION = struct.Struct("<IQ")  # file index, byte offset of the line


@dataclass(frozen=True)
class Ref:
    """Where one item's line is: ``file`` indexes its side's file list."""

    file: int
    offset: int
    index: int  # among the items of its type on its URL, from 0


@dataclass
class ItemsDiff:
    old_files: list[str]
    new_files: list[str]
    added: list[Ref]
    removed: list[Ref]
    changed: list[tuple[Ref, Ref]]  # (old, new)
    unchanged: int

    def counts(self) -> dict[str, int]:
        return {
            "added": len(self.added),
            "removed": len(self.removed),
            "changed": len(self.changed),
            "unchanged": self.unchanged,
        }

    def differs(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def _digest(value: Any) -> bytes:
    # ensure_ascii: a lone surrogate in a hand-edited file is escaped, never an error.
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode("ascii"), digest_size=16).digest()


class _Indexer:
    """The key of each item of one side: its page key (type, url) and its index."""

    def __init__(self) -> None:
        self.seen: dict[bytes, int] = {}

    def key(self, item: Item) -> tuple[bytes, int]:
        page = _digest([item["type"], item["url"]])
        index = self.seen.get(page, 0)
        self.seen[page] = index + 1
        return page + index.to_bytes(8, "little"), index


def compare(old_files: list[str], new_files: list[str], warn: Warn | None) -> ItemsDiff:
    """Match every item of NEW against OLD's; ``warn`` gets each line that is not an item."""
    index: dict[bytes, bytes] = {}  # key -> fields digest + location
    keys = _Indexer()
    for number, path in enumerate(old_files):
        for line in read_items(path, warn):
            key, _ = keys.key(line.item)
            index[key] = _digest(line.item["fields"]) + _LOCATION.pack(number, line.offset)
    result = ItemsDiff(old_files, new_files, [], [], [], 0)
    keys = _Indexer()
    for number, path in enumerate(new_files):
        for line in read_items(path, warn):
            key, position = keys.key(line.item)
            here = Ref(number, line.offset, position)
            before = index.pop(key, None)
            if before is None:
                result.added.append(here)
            elif before[:16] == _digest(line.item["fields"]):
                result.unchanged += 1
            else:
                file, offset = _LOCATION.unpack(before[16:])
                result.changed.append((Ref(file, offset, position), here))
    # What is left is what NEW does not have, in OLD's order (a dict keeps insertion order).
    for key, rest in index.items():
        file, offset = _LOCATION.unpack(rest[16:])
        result.removed.append(Ref(file, offset, int.from_bytes(key[16:], "little")))
    return result


# -- field-level changes ------------------------------------------------------------


@dataclass(frozen=True)
class FieldChange:
    field: str
    old: Any  # the value, or MISSING / NOT_EXTRACTED
    new: Any


class _NoValue:
    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


MISSING = _NoValue("(missing)")  # the field is in the item's ``missing``: it matched nothing
NOT_EXTRACTED = _NoValue("(not extracted)")  # the rules of that side have no such field


def value_of(item: Item, name: str) -> Any:
    fields = item["fields"]
    if name in fields:
        return fields[name]
    return MISSING if name in item.get("missing", ()) else NOT_EXTRACTED


def field_names(*items: Item) -> list[str]:
    """Every field name of the items: values first, then missing ones, first seen first."""
    names: dict[str, None] = {}
    for item in items:
        names.update(dict.fromkeys(item["fields"]))
        names.update(dict.fromkeys(item.get("missing", ())))
    return list(names)


def field_changes(old: Item, new: Item) -> list[FieldChange]:
    """The fields whose value differs (as JSON values), in NEW's then OLD's order."""
    out = []
    for name in field_names(new, old):
        before, after = value_of(old, name), value_of(new, name)
        if _comparable(before) != _comparable(after):
            out.append(FieldChange(name, before, after))
    return out


def _comparable(value: Any) -> Any:
    if isinstance(value, _NoValue):
        return value
    return json.dumps(value, sort_keys=True)  # 1 and 1.0, True and 1 are not the same value


# -- rendering ---------------------------------------------------------------------

# C0 controls are escaped by JSON itself; these are not, and a terminal acts on them.
_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def shown_text(text: str) -> str:
    """A URL or type name as one safe line: control characters as ``\\uXXXX``."""
    return _CONTROLS.sub(_escape, text)


def shown_value(value: Any) -> str:
    """A field value as one safe line of at most ``MAX_VALUE`` characters (JSON)."""
    if isinstance(value, _NoValue):
        return value.text
    text = _UNSAFE.sub(_escape, json.dumps(value, ensure_ascii=False, sort_keys=True))
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "…"


def _label(diff: ItemsDiff, files: list[str], ref: Ref, item: Item) -> str:
    several = len(diff.old_files) > 1 or len(diff.new_files) > 1
    seed = f"[{shown_text(_stem(files[ref.file]))}] " if several else ""
    return f"  {seed}{shown_text(item['type'])}[{ref.index}] {shown_text(item['url'])}"


def _stem(path: str) -> str:
    return os.path.basename(path).removesuffix(".jsonl")


def _bounded(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_FIELDS:
        return lines
    return [*lines[:MAX_FIELDS], f"      … {len(lines) - MAX_FIELDS} more field(s)"]


class _Readers:
    """Both sides' re-readers; an item that cannot be read again is a warning."""

    def __init__(self, diff: ItemsDiff, warn: Warn | None) -> None:
        self.old, self.new = ItemReader(diff.old_files), ItemReader(diff.new_files)
        self.warn = warn

    def get(self, side: ItemReader, ref: Ref) -> Item | None:
        item = side.read_at(ref.file, ref.offset)
        if item is None and self.warn is not None:
            self.warn(
                f"{side.paths[ref.file]}: changed while being compared; "
                f"the item at byte {ref.offset} is not shown"
            )
        return item

    def close(self) -> None:
        self.old.close()
        self.new.close()


def to_text(diff: ItemsDiff, warn: Warn | None = None) -> Iterator[str]:
    """The counts line, then each class but ``unchanged``: one line per item and one
    indented line per field (added and removed: every field; changed: old → new)."""
    totals = diff.counts()
    yield ", ".join(f"{totals[kind]} {kind}" for kind in KINDS) + "\n"
    readers = _Readers(diff, warn)
    try:
        for kind, refs, side, files in (
            ("added", diff.added, readers.new, diff.new_files),
            ("removed", diff.removed, readers.old, diff.old_files),
        ):
            if refs:
                yield f"{kind} ({len(refs)}):\n"
            for ref in refs:
                item = readers.get(side, ref)
                if item is not None:
                    rows = [
                        f"      {shown_text(name)}: {shown_value(value_of(item, name))}"
                        for name in field_names(item)
                    ]
                    yield "\n".join([_label(diff, files, ref, item), *_bounded(rows)]) + "\n"
        if diff.changed:
            yield f"changed ({len(diff.changed)}):\n"
        for old_ref, new_ref in diff.changed:
            old, new = readers.get(readers.old, old_ref), readers.get(readers.new, new_ref)
            if old is not None and new is not None:
                rows = [
                    f"      {shown_text(c.field)}: {shown_value(c.old)} → {shown_value(c.new)}"
                    for c in field_changes(old, new)
                ]
                yield (
                    "\n".join([_label(diff, diff.new_files, new_ref, new), *_bounded(rows)]) + "\n"
                )
    finally:
        readers.close()


def _side(item: Item | None) -> dict[str, Any] | None:
    if item is None:
        return None
    out: dict[str, Any] = {key: item[key] for key in ("pageId", "sourceRef") if key in item}
    out["fields"] = item["fields"]
    out["missing"] = item.get("missing", [])
    return out


def _json_change(change: FieldChange) -> dict[str, Any]:
    """``{"field", "old", "new"}``; a side without a value has no key (its item's
    ``missing`` says whether the field matched nothing or was not extracted)."""
    out: dict[str, Any] = {"field": change.field}
    for key, value in (("old", change.old), ("new", change.new)):
        if not isinstance(value, _NoValue):
            out[key] = value
    return out


def _entry(kind: str, ref: Ref, old: Item | None, new: Item | None) -> dict[str, Any]:
    item = new if new is not None else old
    assert item is not None
    entry: dict[str, Any] = {
        "class": kind,
        "type": item["type"],
        "url": item["url"],
        "index": ref.index,
        "old": _side(old),
        "new": _side(new),
    }
    if old is not None and new is not None:
        entry["changes"] = [_json_change(c) for c in field_changes(old, new)]
    return entry


def to_json(diff: ItemsDiff, warn: Warn | None = None) -> Iterator[str]:
    """One JSON object, in pieces: ``counts``, ``differs``, then ``items``: every item
    that is not unchanged, added then removed then changed, with both sides."""
    head = {"counts": diff.counts(), "differs": diff.differs()}
    yield json.dumps(head, ensure_ascii=False)[:-1] + ', "items": ['
    readers = _Readers(diff, warn)
    first = True
    try:
        for kind, ref, old_ref, new_ref in _every(diff):
            old = readers.get(readers.old, old_ref) if old_ref is not None else None
            new = readers.get(readers.new, new_ref) if new_ref is not None else None
            if (old_ref is not None and old is None) or (new_ref is not None and new is None):
                continue
            yield ("" if first else ", ") + json.dumps(
                _entry(kind, ref, old, new), ensure_ascii=False
            )
            first = False
    finally:
        readers.close()
    yield "]}\n"


def _every(diff: ItemsDiff) -> Iterator[tuple[str, Ref, Ref | None, Ref | None]]:
    for ref in diff.added:
        yield "added", ref, None, ref
    for ref in diff.removed:
        yield "removed", ref, ref, None
    for old, new in diff.changed:
        yield "changed", new, old, new
