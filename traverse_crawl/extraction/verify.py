"""``scrapy extract --verify``: every item of an items file against the bytes it names.

For each item: its snapshot is read again by ``sourceRef`` (and its body checked
against the ref's sha256); each evidence entry's node is resolved again in the parsed
body and must read exactly the entry's text; a span must be where that node's text
is, and cover it; and each value in ``fields`` must be what the entry's text gives
through the ``re``, ``url`` and ``type`` the entry names. Needs no extraction file.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import regex
from lxml import etree

from traverse_crawl.extraction.extractor import document_base, matched_text, parse_body
from traverse_crawl.extraction.from_store import read_snapshot
from traverse_crawl.extraction.rules import NAMESPACES
from traverse_crawl.extraction.spans import SourceMap
from traverse_crawl.extraction.values import NoValue, derive
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import SnapshotStore


@dataclass(frozen=True)
class Mismatch:
    line: int
    item: str  # "type T, url U"
    field: str  # "" for the item as a whole
    why: str

    def __str__(self) -> str:
        where = f"line {self.line} ({self.item})"
        return (
            f"{where}, field {self.field!r}: {self.why}" if self.field else f"{where}: {self.why}"
        )


class _Page:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.root, exact = parse_body(snapshot["body"])
        self.source = (
            SourceMap(snapshot["body"], self.root) if exact and self.root is not None else None
        )
        self.base = (
            document_base(self.root, snapshot["url"]) if self.root is not None else snapshot["url"]
        )


def body_matches(snapshot: Snapshot) -> bool:
    body = snapshot["body"].encode("utf-8", "surrogatepass")
    return hashlib.sha256(body).hexdigest() == snapshot["bodyHash"]


class Verifier:
    def __init__(self, store: SnapshotStore) -> None:
        self.store = store
        self._ref = ""
        self._page: _Page | None = None
        self.entries = 0

    def _load(self, ref: str) -> _Page | str:
        if ref == self._ref and self._page is not None:
            return self._page
        snapshot = read_snapshot(self.store, ref)
        if snapshot is None:
            return f"its snapshot is not in the store ({ref})"
        if snapshot.get("bodyBytes") is None and not body_matches(snapshot):
            return "its snapshot's body does not match the sha256 of its sourceRef"
        self._ref, self._page = ref, _Page(snapshot)
        return self._page

    def verify(self, number: int, item: dict[str, Any]) -> Iterator[Mismatch]:
        label = f"type {item.get('type')!r}, url {item.get('url')}"
        ref = item.get("sourceRef")
        if not isinstance(ref, str):
            yield Mismatch(number, label, "", "no sourceRef")
            return
        page = self._load(ref)
        if isinstance(page, str):
            yield Mismatch(number, label, "", page)
            return
        fields = item.get("fields") or {}
        evidence = item.get("evidence") or {}
        missing = item.get("missing") or []
        for name in fields:
            if name not in evidence:
                yield Mismatch(number, label, name, "a value without evidence")
        for name in missing:
            if name in fields:
                yield Mismatch(number, label, name, "both in fields and missing")
        for name, entries in evidence.items():
            if not isinstance(entries, list):
                yield Mismatch(number, label, name, "its evidence is not a list")
                continue
            yield from self._field(number, label, name, entries, fields, page)

    def _field(
        self,
        number: int,
        label: str,
        name: str,
        entries: list[Any],
        fields: dict[str, Any],
        page: _Page,
    ) -> Iterator[Mismatch]:
        derived: list[Any] = []
        many = isinstance(fields.get(name), list)
        for entry in entries:
            self.entries += 1
            if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
                yield Mismatch(number, label, name, "an evidence entry without text")
                continue
            text = entry["text"]
            why = self._where(entry, text, page)
            if why is not None:
                yield Mismatch(number, label, name, why)
                # The value is still checked against the text the entry claims.
            try:
                pattern = regex.compile(entry["re"]) if "re" in entry else None
                value = derive(text, pattern, bool(entry.get("url")),
                               str(entry.get("type", "string")), page.base)  # fmt: skip
            except NoValue as exc:
                if "reason" not in entry:
                    yield Mismatch(number, label, name, f"its text gives no value ({exc})")
                continue
            except (regex.error, KeyError, TypeError) as exc:
                yield Mismatch(number, label, name, f"an evidence entry that cannot be read: {exc}")
                continue
            if "reason" in entry:
                yield Mismatch(number, label, name, f"the text {text!r} gives {value!r}, "
                               f"yet the evidence says: {entry['reason']}")  # fmt: skip
                continue
            derived.append(value)
        if name not in fields:
            if derived:
                yield Mismatch(
                    number, label, name, f"missing, yet its evidence gives {derived[0]!r}"
                )
            return
        expected = derived if many else (derived[0] if derived else None)
        if fields[name] != expected or type(fields[name]) is not type(expected):
            yield Mismatch(number, label, name,
                           f"the value {fields[name]!r} is not what its evidence gives "
                           f"({expected!r})")  # fmt: skip

    def _where(self, entry: dict[str, Any], text: str, page: _Page) -> str | None:
        """Why the entry's node does not read its text (or its span is wrong), or None."""
        node = entry.get("node")
        span = entry.get("span")
        if node is None:
            return None if span is None else "a span without a node"
        if page.root is None:
            return "the stored body does not parse"
        try:
            found = etree.XPath(str(node), namespaces=NAMESPACES, smart_strings=True)(page.root)
        except etree.XPathError:
            return f"the node {node} is not an XPath"
        if not isinstance(found, list) or len(found) != 1:
            return f"the node {node} is not one node of the page"
        result = found[0]
        actual = matched_text(result)
        if actual != text:
            return f"the text at {node} is {actual!r}, not {text!r}"
        if span is None:
            return None
        body = page.snapshot["body"]
        if (
            not isinstance(span, list)
            or len(span) != 2
            or not all(isinstance(n, int) for n in span)
            or body[span[0] : span[1]] != text
        ):
            return f"the span {span} does not hold {text!r} in the stored body"
        located = page.source.span(result, text) if page.source is not None else None
        if located is None or list(located) != span:
            return f"the span {span} is not where the text of {node} is"
        return None
