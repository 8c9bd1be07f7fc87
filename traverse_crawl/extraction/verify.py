"""``scrapy extract --verify``: every item of an items file against the bytes it names.

An items file may have been written by anyone, so nothing in it is trusted but as a
claim: each item is extracted again, from the snapshot its ``sourceRef`` names (found
only by the store's own resolution, ``SnapshotStore.read_ref``, its body checked
against its ``bodyHash``), with the rules of ``TRAVERSE_EXTRACT`` (which must be the
rules that made it: the item's ``extractor`` is their ``sha256:``), in an extraction
process with the crawl's bounds (``extraction/process.py``). The item must be exactly
what that gives: every value, every evidence entry (selector, node, text, span, ``re``,
``url``, ``type``, reason), ``missing``. No selector, node, regular expression or text
of the file is ever evaluated. Each difference is one line, each line bounded in
length (``LINE``, a value shown in at most ``SHOWN`` characters, with its length);
an item gives at most ``PER_ITEM`` lines. A line that is not an item (bad JSON, nested
too deeply, not UTF-8) is a line too, never a traceback and never a pass.
"""

from __future__ import annotations

import collections
import json
import os
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from traverse_crawl.extraction.extractor import MAX_ITEM_BYTES_PER_PAGE, timeout_warning
from traverse_crawl.extraction.from_store import DAMAGED, UNREAD, read_checked
from traverse_crawl.extraction.process import ExtractionPool, PageJob
from traverse_crawl.extraction.process_child import Answer
from traverse_crawl.extraction.rules import Rules
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import SnapshotStore
from traverse_crawl.utils.terminal import escape_controls

SHOWN = 120  # characters of one value, at most, in a line
LINE = 1000  # characters of a line, at most
PER_ITEM = 20  # lines of one item, at most (then one saying how many more)
CHUNK = 200  # lines read, and their pages extracted, at a time
CHUNK_BYTES = 64 << 20  # … or this many bytes of lines, or of the pages' bodies
PAGES_KEPT = 256  # pages' extractions kept for the items after them (a chunk's, at least)
MAX_LOOKED = 1000  # evidence entries of a line looked at to find its item

_EVIDENCE_KEYS = ("selector", "node", "text", "span", "re", "url", "type", "reason")
_ITEM_KEYS = ("type", "pageId", "url", "sourceRef", "extractor")
_REQUIRED: tuple[tuple[str, type], ...] = (
    ("type", str), ("url", str), ("sourceRef", str), ("fields", dict), ("missing", list),
    ("extractor", str), ("evidence", dict),
)  # fmt: skip


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_REPR = reprlib.Repr()
_REPR.maxstring = SHOWN
_REPR.maxother = SHOWN
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 6


def shown(value: Any) -> str:
    """``repr(value)`` in at most about ``SHOWN`` characters, with its length when cut."""
    text = _REPR.repr(value)
    if len(text) > SHOWN:
        text = text[: SHOWN - 1] + "…"
    if isinstance(value, str) and len(value) > SHOWN - 2:
        text += f" ({len(value):,} characters)"
    elif isinstance(value, (list, dict)) and len(value) > _REPR.maxlist:
        text += f" ({len(value):,} {'entries' if isinstance(value, list) else 'keys'})"
    return text


def plain(text: str) -> str:
    """A URL as it is, in at most about ``SHOWN`` characters, with its length when cut."""
    if len(text) <= SHOWN:
        return text
    return f"{text[: SHOWN - 1]}… ({len(text):,} characters)"


def clip(line: str) -> str:
    """One output line: terminal controls escaped, at most ``LINE`` characters."""
    line = escape_controls(line)
    return line if len(line) <= LINE else line[: LINE - 1] + "…"


def strict_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1``, ``1.0`` and ``true`` are three different values."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(strict_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(strict_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True)
class Mismatch:
    line: int
    item: str  # "type T, url U", or "" when the line is not an item
    field: str | None  # None for the item as a whole
    why: str

    def __str__(self) -> str:
        where = f"line {self.line} ({self.item})" if self.item else f"line {self.line}"
        if self.field is None:
            return f"{where}: {self.why}"
        return f"{where}, field {shown(self.field)}: {self.why}"


def canonical(item: Any) -> str:
    """One text per JSON value: keys sorted; ``1``, ``1.0`` and ``true`` told apart."""
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


class _Page:
    """The items the rules give from one snapshot, and which lines of the file were
    found to be each of them."""

    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.matched: dict[int, int] = {}  # item's position -> the line that is it
        self._exact: dict[str, int] | None = None
        self._nodes: dict[str, list[int]] | None = None

    def exact(self) -> dict[str, int]:
        if self._exact is None:
            self._exact = {}
            for position, item in enumerate(self.items):
                self._exact.setdefault(canonical(item), position)
        return self._exact

    def closest(self, item: dict[str, Any], same: list[int]) -> int:
        """The item of the rules a line that is none of them is compared with: the one
        that shares the most evidence nodes with it (the same card, with a forged
        field), else the first of its type not yet found in the file."""
        if self._nodes is None:
            self._nodes = {}
            for position, found in enumerate(self.items):
                for entries in found["evidence"].values():
                    for entry in entries:
                        if "node" in entry:
                            self._nodes.setdefault(entry["node"], []).append(position)
        wanted = set(same)
        hits: collections.Counter[int] = collections.Counter()
        looked = 0
        for entries in item["evidence"].values():
            for entry in entries if isinstance(entries, list) else []:
                looked += 1
                if looked > MAX_LOOKED:
                    break
                node = entry.get("node") if isinstance(entry, dict) else None
                if isinstance(node, str):
                    hits.update(p for p in self._nodes.get(node, []) if p in wanted)
        if hits:
            best = max(hits.values())
            return min(position for position, count in hits.items() if count == best)
        return next((position for position in same if position not in self.matched), same[0])


class Verifier:
    """Checks items against what ``rules`` give from their snapshots in ``store``."""

    def __init__(
        self,
        store: SnapshotStore,
        rules: Rules,
        max_items: int,
        timeout: float,
        max_item_bytes: int = MAX_ITEM_BYTES_PER_PAGE,
    ) -> None:
        self.store = store
        self.rules = rules
        self.timeout = timeout
        self.fields = {t.name: [f.name for f in t.fields] for t in rules.types}
        # The crawl's bounds, so a page gives the items the crawl wrote.
        workers = min(os.cpu_count() or 1, 2)
        self.pool = ExtractionPool(
            rules, max_items, timeout, workers, max_item_bytes=max_item_bytes
        )
        self.pages: collections.OrderedDict[tuple[str, Any, str], _Page | str]
        self.pages = collections.OrderedDict()
        self.matched: dict[tuple[str, Any, str], dict[int, int]] = {}
        self.items = 0
        self.entries = 0

    def close(self) -> None:
        self.pool.close()

    def verify_lines(self, lines: Iterator[bytes]) -> Iterator[Mismatch]:
        """Each line's mismatches (blank lines are skipped). Lines are read a chunk at a
        time, and the pages of a chunk extracted together (the processes kept busy)."""
        chunk: list[tuple[int, Any]] = []
        size = 0
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            self.items += 1
            try:
                item: Any = _DECODER.decode(raw.decode("utf-8"))
            except (ValueError, RecursionError) as exc:
                reason = "nested too deeply" if isinstance(exc, RecursionError) else exc
                item = Mismatch(number, "", None, f"not a JSON item ({reason})")
            chunk.append((number, item))
            size += len(raw)
            if len(chunk) >= CHUNK or size >= CHUNK_BYTES:
                yield from self._chunk(chunk)
                chunk, size = [], 0
        yield from self._chunk(chunk)

    def _chunk(self, chunk: list[tuple[int, Any]]) -> Iterator[Mismatch]:
        self._prefetch([item for _number, item in chunk])
        for number, item in chunk:
            if isinstance(item, Mismatch):
                yield item
                continue
            found = 0
            try:
                for mismatch in self.verify(number, item):
                    found += 1
                    if found <= PER_ITEM:
                        yield mismatch
            except RecursionError:
                found += 1
                yield Mismatch(number, "", None, "not an extracted item (nested too deeply)")
            if found > PER_ITEM:
                yield Mismatch(number, "", None, f"{found - PER_ITEM:,} more mismatch(es)")

    def _prefetch(self, items: list[Any]) -> None:
        """The pages of these items that look checkable, extracted in one go."""
        keys: dict[tuple[str, Any, str], None] = {}
        for item in items:
            if (
                isinstance(item, dict)
                and isinstance(item.get("sourceRef"), str)
                and isinstance(item.get("url"), str)
                and item.get("extractor") == self.rules.extractor
            ):
                key = (item["sourceRef"], item.get("pageId"), item["url"])
                if key not in self.pages:
                    keys[key] = None
        jobs: list[PageJob] = []
        waiting: list[tuple[str, Any, str]] = []
        size = 0
        for key in keys:
            if size >= CHUNK_BYTES:
                break  # the rest are read when their items come
            job = self._job(*key)
            if isinstance(job, str):
                self._keep(key, job)
                continue
            size += len(job[0])
            jobs.append(job)
            waiting.append(key)
        for key, answer in zip(waiting, self.pool.extract(jobs) if jobs else [], strict=True):
            self._keep(key, self._answered(answer))

    def verify(self, number: int, item: Any) -> Iterator[Mismatch]:
        if not isinstance(item, dict):
            yield Mismatch(number, "", None, "not an extracted item (a JSON object)")
            return
        url = item.get("url")
        url = plain(url) if isinstance(url, str) else shown(url)
        label = f"type {shown(item.get('type'))}, url {url}"
        for key, kind in _REQUIRED:
            if not isinstance(item.get(key), kind):
                yield Mismatch(
                    number, label, None, f"not an extracted item: {key!r} is missing or not "
                    f"{'an object' if kind is dict else 'a list' if kind is list else 'a string'}",
                )  # fmt: skip
                return
        if item["extractor"] != self.rules.extractor:
            yield Mismatch(number, label, None,
                           f"made by the extractor {shown(item['extractor'])}, not by "
                           f"TRAVERSE_EXTRACT ({self.rules.extractor}): verify it with the "
                           "extraction file that made it")  # fmt: skip
            return
        if item["type"] not in self.fields:
            yield Mismatch(number, label, None, "TRAVERSE_EXTRACT has no such type")
            return
        page_id = item.get("pageId")
        why = self._head(item["sourceRef"], page_id, item["url"])
        if why is not None:
            yield Mismatch(number, label, None, why)
            return
        page = self._page(item["sourceRef"], page_id, item["url"])
        if isinstance(page, str):
            yield Mismatch(number, label, None, page)
            return
        same = [n for n, found in enumerate(page.items) if found.get("type") == item["type"]]
        if not same:
            why = f"the rules give no {item['type']!r} item from its snapshot"
            yield Mismatch(number, label, None, why)
            return
        exact = page.exact().get(canonical(item))
        if exact is not None:
            first = page.matched.setdefault(exact, number)
            if first != number:
                yield Mismatch(number, label, None, f"the same item as line {first}: the rules "
                               "give it once")  # fmt: skip
                return
            evidence = page.items[exact]["evidence"]
            self.entries += sum(len(entries) for entries in evidence.values())
            return
        expected = page.items[page.closest(item, same)]
        yield from self._compare(number, label, item, expected)

    def _head(self, source_ref: str, page_id: Any, url: str) -> str | None:
        ref = parse_source_ref(source_ref)
        if ref is None:
            return f"the sourceRef {shown(source_ref)} is not a traverse-snapshot reference"
        if page_id is not None and page_id != ref.source_id:
            return f"the pageId {shown(page_id)} is not its sourceRef's page"
        if isinstance(page_id, str) and not page_id.endswith("::" + url):
            return f"the url is not its page's ({shown(page_id)})"
        return None

    def _page(self, source_ref: str, page_id: Any, url: str) -> _Page | str:
        """The items the rules give from the snapshot, or why there are none to compare."""
        key = (source_ref, page_id, url)
        if key in self.pages:
            self.pages.move_to_end(key)
            return self.pages[key]
        job = self._job(source_ref, page_id, url)
        found = job if isinstance(job, str) else self._answered(self.pool.extract([job])[0])
        return self._keep(key, found)

    def _keep(self, key: tuple[str, Any, str], found: _Page | str) -> _Page | str:
        if isinstance(found, _Page):  # the lines found so far, kept past the page's parse
            found.matched = self.matched.setdefault(key, {})
        self.pages[key] = found
        if len(self.pages) > PAGES_KEPT:
            self.pages.popitem(last=False)
        return found

    def _job(self, source_ref: str, page_id: Any, url: str) -> PageJob | str:
        snapshot = read_checked(self.store, source_ref)
        if isinstance(snapshot, str):
            if snapshot == DAMAGED:
                return "its snapshot's body does not match its bodyHash (changed since the capture)"
            if snapshot == UNREAD:
                return f"its snapshot is not in the store ({shown(source_ref)})"
            return f"its snapshot {snapshot} ({shown(source_ref)})"
        if snapshot["contentType"] != "html":
            return f"its snapshot is {snapshot['contentType']}, not html: it has no items"
        return (snapshot["body"], snapshot["url"], url, page_id, source_ref, None)

    def _answered(self, answer: Answer) -> _Page | str:
        _lines, items, warnings = answer
        if timeout_warning(self.timeout) in warnings:
            return (
                f"its page's extraction stopped after {self.timeout:g} s "
                "(TRAVERSE_EXTRACT_TIMEOUT): it cannot be verified"
            )
        return _Page(items)

    def _compare(
        self, number: int, label: str, item: dict[str, Any], expected: dict[str, Any]
    ) -> Iterator[Mismatch]:
        fields, missing, evidence = item["fields"], item["missing"], item["evidence"]
        want_fields, want_missing = expected["fields"], expected["missing"]
        want_evidence = expected["evidence"]
        rule_fields = self.fields[item["type"]]
        names = dict.fromkeys(rule_fields)
        for name in [*fields, *missing, *evidence]:
            names[name] = None
        said = False
        for name in names:
            if not isinstance(name, str):
                said = True
                yield Mismatch(number, label, None, f"'missing' holds {shown(name)}, not a name")
                continue
            if name not in rule_fields:
                said = True
                yield Mismatch(number, label, name, f"type {item['type']!r} has no such field")
                continue
            why = _value_why(name, fields, missing, want_fields)
            if why is not None:
                said = True
                yield Mismatch(number, label, name, why)
            why = _evidence_why(evidence.get(name), want_evidence.get(name))
            if why is not None:
                said = True
                yield Mismatch(number, label, name, why)
        if not said and not strict_equal(missing, want_missing):
            said = True
            yield Mismatch(number, label, None, f"'missing' is {shown(missing)} where the rules "
                           f"give {shown(want_missing)}")  # fmt: skip
        for key in dict.fromkeys([*_ITEM_KEYS, *item, *expected]):
            if key in ("fields", "missing", "evidence"):
                continue
            if key not in expected:
                said = True
                yield Mismatch(number, label, None, f"an unknown key {shown(key)}")
            elif key not in item:
                said = True
                yield Mismatch(number, label, None, f"no {key!r}, where the rules give "
                               f"{shown(expected[key])}")  # fmt: skip
            elif not strict_equal(item[key], expected[key]):
                said = True
                yield Mismatch(number, label, None, f"the {key} {shown(item[key])} is not what "
                               f"the rules give ({shown(expected[key])})")  # fmt: skip
        if not said and not strict_equal(item, expected):
            yield Mismatch(number, label, None, "it is not what the rules give from its snapshot")


def _value_why(
    name: str, fields: dict[str, Any], missing: list[Any], want: dict[str, Any]
) -> str | None:
    has, is_missing = name in fields, name in missing
    if has and is_missing:
        return "both in fields and missing"
    if missing.count(name) > 1:
        return "in missing more than once"
    if has and name in want:
        if strict_equal(fields[name], want[name]):
            return None
        return f"the value {shown(fields[name])} is not what the rules give ({shown(want[name])})"
    if has:
        return f"the value {shown(fields[name])}, yet the rules give no value"
    if name in want:
        return f"no value, yet the rules give {shown(want[name])}"
    if not is_missing:
        return "neither in fields nor missing"
    return None


def _evidence_why(got: Any, want: list[dict[str, Any]] | None) -> str | None:
    if strict_equal(got, want):
        return None
    if got is None:
        return f"no evidence, yet the rules give {len(want or [])} entry(ies)"
    if not isinstance(got, list):
        return "its evidence is not a list"
    if want is None:
        return f"{len(got):,} evidence entry(ies), yet the rules give none"
    if len(got) != len(want):
        return f"{len(got):,} evidence entry(ies) where the rules give {len(want)}"
    for position, (entry, wanted) in enumerate(zip(got, want, strict=True), 1):
        if strict_equal(entry, wanted):
            continue
        where = f"evidence entry {position}"
        if not isinstance(entry, dict):
            return f"{where} is not an object"
        for key in dict.fromkeys([*_EVIDENCE_KEYS, *entry, *wanted]):
            if key in entry and key not in wanted:
                return f"{where}: a {shown(key)} ({shown(entry[key])}) where the rules give none"
            if key in wanted and key not in entry:
                return f"{where}: no {key}, where the rules give {shown(wanted[key])}"
            if key in entry and not strict_equal(entry[key], wanted[key]):
                return (
                    f"{where}: the {key} {shown(entry[key])} is not what the rules give "
                    f"({shown(wanted[key])})"
                )
    return "its evidence is not what the rules give"  # pragma: no cover - found above
