"""The checks of one seed, measured with small memory (docs/checks.md).

``SeedEvaluator`` is fed a seed's items, one at a time (an items file's lines, or any
item ``ItemAdapter`` accepts), then its manifest's pages, and gives one result per
check. What it keeps is counts, the first examples of each failing check, and for a
``distinct`` field a 16-byte digest per value seen: never the items themselves.
Pure: no Scrapy, no files.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from traverse_crawl.checks.rules import Checks, TypeChecks, ValueRule

EXAMPLES = 5  # examples of one failing check, at most
PATTERN_TIMEOUT = 1.0  # seconds one value may take to match a pattern
_ABSENT = object()


def outcome_kind(page: Mapping[str, Any]) -> str:
    """A manifest page's outcome kind: ``ok`` (a snapshot) or its error's ``kind``."""
    fetch = page.get("fetch") or {}
    error = fetch.get("error")
    return str(error.get("kind")) if isinstance(error, dict) else "ok"


def _present(value: Any) -> bool:
    if value is None or value is _ABSENT:
        return False
    return bool(value) or not isinstance(value, (str, list))


def _digest(value: Any) -> bytes:
    """16 bytes for a value: what ``distinct`` keeps of each (a string as it is, any
    other value as its JSON text, so ``"1"``, ``1`` and ``1.0`` are three values)."""
    if isinstance(value, str):
        data = b"s" + value.encode("utf-8", "surrogatepass")
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
        data = b"j" + text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).digest()


# An items file's line ends with its extractor and evidence (extraction/extractor.py
# writes the keys in this order), and the evidence is most of its bytes. The checks read
# the fields; the evidence is read only for an example. Hand-written because JSON has no
# way to stop a parse early: the line up to this key, closed, is the item without them;
# in JSON text an unescaped '"' only delimits a string, and a field named "extractor"
# in the evidence is followed by '[', so the last match is the item's own key. A line
# where it is not found, or whose head does not parse as an item, is read whole.
_TAIL = b',"extractor":"'


def _head(line: bytes) -> dict[str, Any] | None:
    """The item without its ``extractor`` and ``evidence``, or None (read it whole)."""
    cut = line.rfind(_TAIL)
    if cut <= 0:
        return None
    try:
        item = json.loads(line[:cut] + b"}")
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(item, dict)
        or not isinstance(item.get("fields"), dict)
        or not isinstance(item.get("missing"), list)
    ):
        return None
    return item


def _evidence_of(line: bytes) -> dict[str, Any]:
    try:
        item = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    evidence = item.get("evidence") if isinstance(item, dict) else None
    return evidence if isinstance(evidence, dict) else {}


class _Item:
    """One item as the checks see it: its type, fields, and where it came from."""

    __slots__ = ("evidence", "fields", "source_ref", "type", "url")

    def __init__(
        self,
        type_name: str,
        fields: Mapping[str, Any],
        url: Any = None,
        source_ref: Any = None,
        evidence: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        self.type = type_name
        self.fields = fields
        self.url = url
        self.source_ref = source_ref
        self.evidence = evidence or {}  # or a function that reads it: only for an example

    def example(self, field: str, value: Any, position: int | None = None) -> dict[str, Any]:
        """``url``, ``sourceRef``, ``field``, ``value``, and the evidence entry of the
        value (its matched ``text``, its ``span`` where there is one, why it is no
        value): ``position`` is the value's place among a ``many`` field's values."""
        out: dict[str, Any] = {"url": self.url, "sourceRef": self.source_ref}
        out["field"] = field
        out["value"] = None if value is _ABSENT else value
        entry = self._entry(field, position, value is _ABSENT)
        if entry is not None:
            for key in ("text", "span", "reason"):
                if key in entry:
                    out[key] = entry[key]
        return {key: item for key, item in out.items() if item is not None or key == "value"}

    def _entry(self, field: str, position: int | None, missing: bool) -> dict[str, Any] | None:
        if callable(self.evidence):
            self.evidence = self.evidence()
        entries = self.evidence.get(field)
        if not isinstance(entries, list):
            return None
        if missing:  # a value that matched and did not convert says why
            found = [e for e in entries if isinstance(e, dict)]
            return found[0] if found else None
        # The values are the entries without a reason, in order.
        valued = [e for e in entries if isinstance(e, dict) and "reason" not in e]
        index = position or 0
        return valued[index] if index < len(valued) else None


class _Failures:
    """A count and the first ``EXAMPLES`` examples."""

    __slots__ = ("count", "examples")

    def __init__(self) -> None:
        self.count = 0
        self.examples: list[dict[str, Any]] = []

    def add(self, example: Any) -> None:
        self.count += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(example() if callable(example) else example)


class _TypeState:
    def __init__(self, rules: TypeChecks) -> None:
        self.rules = rules
        self.count = 0
        self.missing = {field: _Failures() for field, _ in rules.coverage}
        self.seen: dict[str, set[bytes]] = {field: set() for field in rules.distinct}
        self.repeated = {field: _Failures() for field in rules.distinct}
        self.checked = {rule.field: 0 for rule in rules.values}
        self.outside = {rule.field: _Failures() for rule in rules.values}
        # The pages that gave an item of this type, while fewer than min_items did
        # (only then does min_items fail and name the pages that gave none).
        self.pages: set[str] = set()

    def add(self, item: _Item) -> None:
        self.count += 1
        rules = self.rules
        if rules.min_items is not None and len(self.pages) < rules.min_items:
            if isinstance(item.source_ref, str):
                self.pages.add(item.source_ref)
        fields = item.fields
        for field, failures in self.missing.items():
            if not _present(fields.get(field, _ABSENT)):
                failures.add(partial(item.example, field, fields.get(field, _ABSENT)))
        for field, seen in self.seen.items():
            value = fields.get(field, _ABSENT)
            if not _present(value):
                continue
            digest = _digest(value)
            if digest in seen:
                self.repeated[field].add(partial(item.example, field, value))
            else:
                seen.add(digest)
        for rule in rules.values:
            value = fields.get(rule.field, _ABSENT)
            if not _present(value):
                continue
            many = isinstance(value, list)
            values = value if many else [value]
            for position, one in enumerate(values):
                self.checked[rule.field] += 1
                why = value_problem(rule, one)
                if why is not None:
                    self.outside[rule.field].add(
                        lambda p=position if many else None, o=one, w=why, r=rule: {
                            **item.example(r.field, o, p),
                            "problem": w,
                        }
                    )


def value_problem(rule: ValueRule, value: Any) -> str | None:
    """Why one value fails ``rule``, or None."""
    if rule.min is not None or rule.max is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return "not a number"
        if rule.min is not None and value < rule.min:
            return f"below min {rule.min:g}"
        if rule.max is not None and value > rule.max:
            return f"above max {rule.max:g}"
    if rule.pattern is not None:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        try:
            matched = rule.pattern.fullmatch(text, timeout=PATTERN_TIMEOUT)
        except TimeoutError:
            return f"pattern took more than {PATTERN_TIMEOUT:g} s"
        if matched is None:
            return "does not match the pattern"
    return None


class SeedEvaluator:
    """The checks of one seed: ``add_item`` each item (or ``add_line`` each items-file
    line), ``add_page`` each manifest page, then ``results()``."""

    def __init__(self, checks: Checks, seed_id: str) -> None:
        self.checks = checks
        self.seed_id = seed_id
        self.types = {rules.name: _TypeState(rules) for rules in checks.types}
        self.pages = 0
        self.kinds: dict[str, int] = {}
        self.first_pages: list[dict[str, Any]] = []
        self.kind_examples = {kind: _Failures() for kind, _ in checks.max_share}
        self.html_pages: dict[str, list[dict[str, Any]]] = {name: [] for name in self.types}
        # min_items's examples: the html pages that gave no item of the type, which the
        # pages can name only when they come after the items (a manifest after its file).
        self.name_pages_without_items = True

    # -- items ---------------------------------------------------------------

    def add_item(
        self,
        type_name: str,
        fields: Mapping[str, Any],
        *,
        url: Any = None,
        source_ref: Any = None,
        evidence: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None,
    ) -> None:
        """One item of type ``type_name`` with its field values (an absent, ``None``,
        empty-string or empty-list value is a field not present)."""
        state = self.types.get(type_name)
        if state is not None:
            state.add(_Item(type_name, fields, url, source_ref, evidence))

    def add(self, item: Any, source_field: str = "sourceRef") -> None:
        """Any item ``ItemAdapter`` accepts: an extracted item (its ``type`` and
        ``fields``, with its evidence), or an item of the spider's own classes, whose
        type is its class name and whose fields are its own; ``source_field`` holds its
        ``sourceRef``."""
        from itemadapter import ItemAdapter

        if isinstance(item, dict) and isinstance(item.get("fields"), dict) and "type" in item:
            evidence = item.get("evidence")
            self.add_item(str(item["type"]), item["fields"], url=item.get("url"),
                          source_ref=item.get("sourceRef"),
                          evidence=evidence if isinstance(evidence, dict) else None)  # fmt: skip
            return
        name = type(item).__name__
        if name not in self.types:
            return
        adapter = ItemAdapter(item)
        ref = adapter.get(source_field)
        url = adapter.get("url")
        if url is None and isinstance(ref, str):
            from traverse_crawl.snapshots.source_ref import parse_source_ref

            parsed = parse_source_ref(ref)
            url = parsed.url if parsed is not None else None
        self.add_item(name, adapter, url=url, source_ref=ref)

    def add_line(self, line: bytes) -> None:
        """One line of an items file (blank lines are skipped; a line that is no item
        raises ``ValueError``)."""
        if not line.strip():
            return
        item = _head(line)
        if item is None:
            item = json.loads(line)
            if not isinstance(item, dict) or not isinstance(item.get("fields"), dict):
                raise ValueError("not an extracted item")
            found = item.get("evidence")
            evidence: Any = found if isinstance(found, dict) else None
        else:
            evidence = partial(_evidence_of, line)
        type_name = item.get("type")
        if type_name in self.types:
            self.add_item(
                str(type_name),
                item["fields"],
                url=item.get("url"),
                source_ref=item.get("sourceRef"),
                evidence=evidence,
            )

    def add_lines(self, lines: Iterable[bytes]) -> None:
        for line in lines:
            self.add_line(line)

    # -- pages ---------------------------------------------------------------

    def add_page(self, page: Mapping[str, Any]) -> None:
        """One page of the seed's manifest (after the items: ``min_items`` names the
        pages that gave none)."""
        self.pages += 1
        kind = outcome_kind(page)
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if len(self.first_pages) < EXAMPLES:
            self.first_pages.append(_page_example(page, kind))
        failures = self.kind_examples.get(kind)
        if failures is not None:
            failures.add(lambda: _page_example(page, kind))
        if kind != "ok" or not self.name_pages_without_items:
            return
        source_ref = page.get("sourceRef")
        for name, state in self.types.items():
            rules = state.rules
            if rules.min_items is None or state.count >= rules.min_items:
                continue
            examples = self.html_pages[name]
            if len(examples) < EXAMPLES and source_ref not in state.pages:
                snapshot = (page.get("fetch") or {}).get("snapshot") or {}
                if snapshot.get("contentType") == "html":
                    examples.append(_page_example(page, kind))

    def add_pages(self, pages: Iterable[Mapping[str, Any]]) -> None:
        for page in pages:
            self.add_page(page)

    # -- results -------------------------------------------------------------

    def results(self, items: bool = True, why_not: str = "") -> list[dict[str, Any]]:
        """One result per check, in the checks file's order. ``items`` False: the item
        checks were not evaluated (``why_not``): passed false, measured null."""
        out: list[dict[str, Any]] = []
        checks = self.checks
        if checks.min_pages is not None:
            passed = self.pages >= checks.min_pages
            out.append(self._result("crawl.min_pages", self.pages, checks.min_pages, passed,
                                    self.pages, self.first_pages))  # fmt: skip
        for kind, share in checks.max_share:
            count = self.kinds.get(kind, 0)
            measured = count / self.pages if self.pages else None
            passed = measured is None or measured <= share
            out.append(self._result(f"crawl.max_share.{kind}", measured, share, passed,
                                    self.pages, self.kind_examples[kind].examples))  # fmt: skip
        for name, state in self.types.items():
            out.extend(self._type_results(name, state, items, why_not))
        return out

    def _type_results(
        self, name: str, state: _TypeState, items: bool, why_not: str
    ) -> list[dict[str, Any]]:
        rules = state.rules
        named: list[tuple[str, Any]] = []
        if rules.min_items is not None:
            named.append(("min_items", rules.min_items))
        named += [(f"coverage.{field}", share) for field, share in rules.coverage]
        named += [(f"distinct.{field}", 0) for field in rules.distinct]
        named += [(f"values.{rule.field}", rule.threshold()) for rule in rules.values]
        out = []
        for key, threshold in named:
            check = f"items.{name}.{key}"
            if not items:
                result = self._result(check, None, threshold, False, None, [])
                result["reason"] = why_not
                out.append(result)
                continue
            what, _, field = key.partition(".")
            if what == "min_items":
                passed = state.count >= threshold
                out.append(self._result(check, state.count, threshold, passed, state.count,
                                        self.html_pages[name]))  # fmt: skip
            elif what == "coverage":
                missing = state.missing[field]
                share = (state.count - missing.count) / state.count if state.count else None
                passed = share is None or share >= threshold
                out.append(self._result(check, share, threshold, passed, state.count,
                                        missing.examples))  # fmt: skip
            elif what == "distinct":
                repeated = state.repeated[field]
                out.append(self._result(check, repeated.count, 0, not repeated.count,
                                        state.count, repeated.examples))  # fmt: skip
            else:
                outside = state.outside[field]
                out.append(self._result(check, outside.count, threshold, not outside.count,
                                        state.checked[field], outside.examples))  # fmt: skip
        return out

    def _result(
        self,
        check: str,
        measured: Any,
        threshold: Any,
        passed: bool,
        over: int | None,
        examples: list[dict[str, Any]],
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "check": check,
            "seed": self.seed_id,
            "measured": measured,
            "threshold": threshold,
            "passed": passed,
            "over": over,
        }
        if not passed and examples:
            result["examples"] = list(examples)
        return result


def _page_example(page: Mapping[str, Any], kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"url": page.get("url")}
    if isinstance(page.get("sourceRef"), str):
        out["sourceRef"] = page["sourceRef"]
    out["field"] = "outcome"
    error = (page.get("fetch") or {}).get("error")
    status = error.get("status") if isinstance(error, dict) else None
    out["value"] = kind if status is None else f"{kind} {status}"
    return out


def evaluate_seed(
    checks: Checks,
    seed_id: str,
    pages: Iterable[Mapping[str, Any]],
    lines: Iterable[bytes] | None,
    why_not: str = "",
) -> list[dict[str, Any]]:
    """Every result of one seed from its manifest's pages and its items file's lines
    (None: the items file is not there to read, ``why_not``)."""
    evaluator = SeedEvaluator(checks, seed_id)
    if lines is not None:
        evaluator.add_lines(lines)
    evaluator.add_pages(pages)
    return evaluator.results(items=lines is not None or not checks.types, why_not=why_not)
