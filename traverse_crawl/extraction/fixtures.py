"""``scrapy extract --fixtures``: items of a trusted run against the current rules.

A fixtures file is an items file (or any file of such lines: ``type``, ``sourceRef``,
``fields``, and ``missing``, ``url``, ``pageId`` when known). Each named snapshot is
read from the store (by the store's own ``sourceRef`` resolution, its body checked
against its ``bodyHash``) and extracted again with the current rules, in this process,
with no network; the fixture is compared with the item of its type at the same place
on the page (the n-th fixture of a type and snapshot with the n-th item the rules
give). Each field is ``equal``, ``changed`` (old → new, with the new evidence) or
``missing`` (a value before, none now; a field missing in both is equal). The
extractions of the last ``PAGES_KEPT`` snapshots are kept, so a page's fixtures are
extracted once.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from traverse_crawl.extraction.extractor import Extractor
from traverse_crawl.extraction.from_store import DAMAGED, UNREAD, read_checked
from traverse_crawl.extraction.verify import clip, plain, shown, strict_equal
from traverse_crawl.snapshots.store import SnapshotStore

PAGES_KEPT = 64
_NONE = object()


@dataclass
class Tally:
    fixtures: int = 0
    equal: int = 0
    changed: int = 0
    missing: int = 0
    not_found: int = 0
    lines: list[str] = field(default_factory=list)

    @property
    def differs(self) -> bool:
        return bool(self.changed or self.missing or self.not_found)


class FixtureRunner:
    def __init__(self, store: SnapshotStore, extractor: Extractor) -> None:
        self.store = store
        self.extractor = extractor
        self.pages: collections.OrderedDict[str, list[dict[str, Any]] | str]
        self.pages = collections.OrderedDict()
        self.seen: collections.Counter[tuple[str, str]] = collections.Counter()
        self.tally = Tally()

    def run(self, lines: Iterator[bytes]) -> Iterator[str]:
        """One output line per field that differs, per fixture that cannot be checked,
        and per fixture whose fields are all equal."""
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            self.tally.fixtures += 1
            yield from (clip(line) for line in self.fixture(number, raw))

    def fixture(self, number: int, raw: bytes) -> Iterator[str]:
        try:
            item = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            self.tally.not_found += 1
            yield f"line {number}: not a JSON item ({exc})"
            return
        if (
            not isinstance(item, dict)
            or not isinstance(item.get("type"), str)
            or not isinstance(item.get("sourceRef"), str)
            or not isinstance(item.get("fields"), dict)
        ):
            self.tally.not_found += 1
            yield f"line {number}: not an item (type, sourceRef and fields are needed)"
            return
        type_name, ref = item["type"], item["sourceRef"]
        url = item.get("url")
        label = f"line {number} (type {shown(type_name)}, url {plain(str(url))})"
        page = self._page(ref, url, item.get("pageId"))
        if isinstance(page, str):
            self.tally.not_found += 1
            yield f"{label}: {page}"
            return
        position = self.seen[(ref, type_name)]
        self.seen[(ref, type_name)] += 1
        same = [found for found in page if found.get("type") == type_name]
        new = same[position] if position < len(same) else None
        if new is None:
            self.tally.missing += 1
            yield (
                f"{label}: missing: the rules give {len(same)} item(s) of this type from "
                f"its snapshot, and this is item {position + 1} of it"
            )
            return
        yield from self._compare(label, item, new)

    def _compare(self, label: str, old: dict[str, Any], new: dict[str, Any]) -> Iterator[str]:
        old_fields, new_fields = old["fields"], new["fields"]
        before_missing = old.get("missing")
        missing_before: list[Any] = before_missing if isinstance(before_missing, list) else []
        names = dict.fromkeys([*old_fields, *missing_before, *new_fields, *new["missing"]])
        equal: list[str] = []
        for name in names:
            if not isinstance(name, str):
                continue
            before = old_fields.get(name, _NONE)
            after = new_fields.get(name, _NONE)
            if before is _NONE and after is _NONE:
                equal.append(name)
            elif before is not _NONE and after is not _NONE and strict_equal(before, after):
                equal.append(name)
            elif after is _NONE:
                self.tally.missing += 1
                why = _evidence(new, name)
                yield f"{label}, field {shown(name)}: missing (was {shown(before)}){why}"
            else:
                self.tally.changed += 1
                was = "missing" if before is _NONE else shown(before)
                yield (
                    f"{label}, field {shown(name)}: changed {was} → {shown(after)}"
                    f"{_evidence(new, name)}"
                )
        self.tally.equal += len(equal)
        if len(equal) == len(names):
            yield f"{label}: equal ({len(equal)} field(s))"

    def _page(self, ref: str, url: Any, page_id: Any) -> list[dict[str, Any]] | str:
        found = self.pages.get(ref)
        if found is not None:
            self.pages.move_to_end(ref)
            return found
        snapshot = read_checked(self.store, ref)
        if isinstance(snapshot, str):
            if snapshot == UNREAD:
                result: list[dict[str, Any]] | str = f"not found: no snapshot {ref} in the store"
            elif snapshot == DAMAGED:
                result = f"not found: the snapshot {ref} changed since the capture"
            else:
                result = f"not found: the snapshot {ref} {snapshot}"
        elif snapshot["contentType"] != "html":
            result = f"not found: the snapshot {ref} is {snapshot['contentType']}, not html"
        else:
            extraction = self.extractor.extract(
                snapshot["body"],
                snapshot["url"],
                page_url=url if isinstance(url, str) else None,
                page_id=page_id if isinstance(page_id, str) else None,
                source_ref=ref,
            )
            result = [dict(item) for item in extraction.items]
        self.pages[ref] = result
        if len(self.pages) > PAGES_KEPT:
            self.pages.popitem(last=False)
        return result


def _evidence(item: dict[str, Any], name: str) -> str:
    """The new evidence of a field: each matched text with its span, or why it is no value."""
    entries = item.get("evidence", {}).get(name) or []
    parts = []
    for entry in entries[:3]:
        part = f"text {shown(entry.get('text'))}"
        if "span" in entry:
            part += f" at {entry['span']}"
        if "reason" in entry:
            part += f": {entry['reason']}"
        parts.append(part)
    if not parts:
        return "; the selector matched nothing"
    more = f" and {len(entries) - 3} more" if len(entries) > 3 else ""
    return f"; now {', '.join(parts)}{more} ({entries[0].get('selector')})"
