"""The extracted item, its line in an items file, and the items file's one writer.

An ``ExtractedItem`` is a ``dict`` (so feed exports write it as it is, and ``FEEDS``
with ``item_classes`` selects it) holding exactly the item's line. Items files are
written whole and atomically, through ``write_items_file`` only.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, BinaryIO

from traverse_crawl.snapshots.store import source_dir_name
from traverse_crawl.storage.location import Location
from traverse_crawl.utils.atomic import atomic_write


class ExtractedItem(dict[str, Any]):
    """One extracted item: ``type``, ``pageId``, ``url``, ``sourceRef``, ``fields``,
    ``missing``, ``extractor``, ``evidence`` (docs/extraction.md)."""


def encode_item(item: dict[str, Any]) -> bytes:
    """The item's line: compact JSON, UTF-8, ``\\n``-terminated; the same item is always
    the same bytes. A lone surrogate (which UTF-8 cannot carry) is written escaped."""
    try:
        text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(item, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def items_path(directory: str, seed_id: str) -> str:
    """``<store-dir-name of the seed id>.jsonl``: named like the seed's manifest."""
    return os.path.join(directory, source_dir_name(seed_id) + ".jsonl")


def write_items_file(path: str, chunks: Iterable[bytes], location: Location | None = None) -> None:
    """Write an items file whole, atomically: a reader never sees a part of one (in
    ``location``, the items directory, under ``path``'s file name, when given)."""

    def write(handle: BinaryIO) -> None:
        for chunk in chunks:
            handle.write(chunk)

    if location is None:
        atomic_write(path, write)
    else:
        location.write_stream(os.path.basename(path), write)


def read_items(path: str) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, item)`` of an items file; ``ValueError`` naming a line that is not one."""
    items = []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc})") from None
            if not isinstance(item, dict) or not isinstance(item.get("fields"), dict):
                raise ValueError(f"{path}:{number}: not an extracted item")
            items.append((number, item))
    return items
