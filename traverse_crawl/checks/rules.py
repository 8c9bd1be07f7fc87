"""The checks file (``TRAVERSE_CHECKS``): read and checked once (docs/checks.md).

A TOML or JSON file of thresholds: ``[crawl]`` (``min_pages``, ``max_share`` by
outcome kind) and ``[items.TYPE]`` (``min_items``, ``coverage``, ``distinct``,
``values``). Every key is checked here, and every ``pattern`` compiled, so a bad
file is a ``ConfigError`` naming ``TRAVERSE_CHECKS`` and the key before any request;
``check_against`` then refuses a type or field the extraction file does not declare.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import regex

from traverse_crawl.config.data_file import parse_data_file, read_data_file
from traverse_crawl.errors import ERROR_KINDS, ConfigError

if TYPE_CHECKING:
    from traverse_crawl.extraction.rules import Rules

SETTING = "TRAVERSE_CHECKS"
# A page's outcome kind in a manifest: "ok" (a snapshot) or its error's kind (``blocked``
# among them: a block page, docs/crawling-real-sites.md).
OUTCOME_KINDS: frozenset[str] = frozenset({"ok", *ERROR_KINDS})
CRAWL_KEYS = ("min_pages", "max_share")
TYPE_KEYS = ("min_items", "coverage", "distinct", "values")
VALUE_KEYS = ("min", "max", "pattern")


@dataclass(frozen=True)
class ValueRule:
    """``[items.TYPE.values] FIELD = {min, max, pattern}``: every value of the field."""

    field: str
    min: float | None = None
    max: float | None = None
    pattern: regex.Pattern[str] | None = None

    def threshold(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.min is not None:
            out["min"] = self.min
        if self.max is not None:
            out["max"] = self.max
        if self.pattern is not None:
            out["pattern"] = self.pattern.pattern
        return out


@dataclass(frozen=True)
class TypeChecks:
    """``[items.TYPE]``: the checks of one item type."""

    name: str
    min_items: int | None = None
    coverage: tuple[tuple[str, float], ...] = ()
    distinct: tuple[str, ...] = ()
    values: tuple[ValueRule, ...] = ()

    def fields(self) -> list[tuple[str, str]]:
        """Each (key, field) the checks name, for ``check_against``."""
        named = [("coverage", f) for f, _ in self.coverage]
        named += [("distinct", f) for f in self.distinct]
        named += [("values", v.field) for v in self.values]
        return named


@dataclass(frozen=True)
class Checks:
    """The checks file; ``digest`` is ``sha256:`` of its bytes."""

    min_pages: int | None
    max_share: tuple[tuple[str, float], ...]
    types: tuple[TypeChecks, ...]
    digest: str
    source: str = ""

    def has_item_checks(self) -> bool:
        return bool(self.types)


def load_checks(path: str) -> Checks:
    """Read and check the checks file at ``path`` (TOML, or JSON by its content)."""
    return checks_from_bytes(read_data_file(SETTING, path), path)


def checks_from_bytes(raw: bytes, source: str = "") -> Checks:
    """Check a checks file's bytes; JSON when it starts with ``{``, else TOML."""
    data = parse_data_file(SETTING, raw, source)
    return compile_checks(data, "sha256:" + hashlib.sha256(raw).hexdigest(), source)


def _table(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(SETTING, f"{key}: expected a table")
    return value


def _unknown(table: dict[str, Any], known: tuple[str, ...], key: str) -> None:
    for name in table:
        if name not in known:
            accepted = ", ".join(known)
            raise ConfigError(SETTING, f"unknown key {key + name!r} (expected {accepted})")


def _whole(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(SETTING, f"{key}: expected a whole number >= 0, got {value!r}")
    if not math.isfinite(value) or value < 0 or value != int(value):
        raise ConfigError(SETTING, f"{key}: expected a whole number >= 0, got {value!r}")
    return int(value)


def _share(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(SETTING, f"{key}: expected a share in [0, 1], got {value!r}")
    if not 0 <= value <= 1:  # NaN fails this too
        raise ConfigError(SETTING, f"{key}: expected a share in [0, 1], got {value!r}")
    return float(value)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(SETTING, f"{key}: expected a number, got {value!r}")
    return value


def _field_name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(SETTING, f"{key}: expected a field name, got {value!r}")
    return value


def compile_checks(data: Any, digest: str, source: str = "") -> Checks:
    table = _table(data, "the file")
    _unknown(table, ("crawl", "items"), "")
    crawl = _table(table.get("crawl", {}), "crawl")
    _unknown(crawl, CRAWL_KEYS, "crawl.")
    min_pages = _whole(crawl["min_pages"], "crawl.min_pages") if "min_pages" in crawl else None
    shares = _table(crawl.get("max_share", {}), "crawl.max_share")
    max_share = []
    for kind, share in shares.items():
        key = f"crawl.max_share.{kind}"
        if kind not in OUTCOME_KINDS:
            kinds = ", ".join(sorted(OUTCOME_KINDS))
            raise ConfigError(SETTING, f"unknown outcome kind {key!r} (expected one of {kinds})")
        max_share.append((kind, _share(share, key)))
    items = _table(table.get("items", {}), "items")
    types = tuple(_compile_type(name, spec) for name, spec in items.items())
    return Checks(min_pages, tuple(max_share), types, digest, source)


def _compile_type(name: str, spec: Any) -> TypeChecks:
    here = f"items.{name}"
    spec = _table(spec, here)
    _unknown(spec, TYPE_KEYS, here + ".")
    min_items = _whole(spec["min_items"], f"{here}.min_items") if "min_items" in spec else None
    coverage = tuple(
        (_field_name(field, f"{here}.coverage"), _share(share, f"{here}.coverage.{field}"))
        for field, share in _table(spec.get("coverage", {}), f"{here}.coverage").items()
    )
    distinct = spec.get("distinct", [])
    if isinstance(distinct, str):
        distinct = [distinct]
    if not isinstance(distinct, list):
        raise ConfigError(SETTING, f"{here}.distinct: expected a list of field names")
    fields = tuple(dict.fromkeys(_field_name(f, f"{here}.distinct") for f in distinct))
    values = tuple(
        _compile_values(field, rule, f"{here}.values.{field}")
        for field, rule in _table(spec.get("values", {}), f"{here}.values").items()
    )
    return TypeChecks(name, min_items, coverage, fields, values)


def _compile_values(field: str, spec: Any, here: str) -> ValueRule:
    spec = _table(spec, here)
    _unknown(spec, VALUE_KEYS, here + ".")
    if not spec:
        raise ConfigError(SETTING, f"{here}: expected at least one of min, max, pattern")
    low = _number(spec["min"], f"{here}.min") if "min" in spec else None
    high = _number(spec["max"], f"{here}.max") if "max" in spec else None
    if low is not None and high is not None and low > high:
        raise ConfigError(SETTING, f"{here}: min {low!r} is above max {high!r}")
    pattern = None
    if "pattern" in spec:
        written = spec["pattern"]
        if not isinstance(written, str):
            raise ConfigError(SETTING, f"{here}.pattern: expected a regular expression string")
        try:
            pattern = regex.compile(written, regex.VERSION0)
        except (regex.error, ValueError, OverflowError, RecursionError) as exc:
            raise ConfigError(
                SETTING, f"{here}.pattern: invalid regular expression {written!r}: {exc}"
            ) from None
    return ValueRule(_field_name(field, here), low, high, pattern)


def check_against(checks: Checks, rules: Rules) -> None:
    """A ``ConfigError`` for the first type or field the checks name that the extraction
    file (``TRAVERSE_EXTRACT``) does not declare."""
    declared = {t.name: {f.name for f in t.fields} for t in rules.types}
    for item_type in checks.types:
        fields = declared.get(item_type.name)
        if fields is None:
            names = ", ".join(repr(n) for n in declared)
            raise ConfigError(
                SETTING,
                f"items.{item_type.name}: TRAVERSE_EXTRACT declares no type "
                f"{item_type.name!r} (its types: {names})",
            )
        for key, field in item_type.fields():
            if field not in fields:
                raise ConfigError(
                    SETTING,
                    f"items.{item_type.name}.{key}.{field}: type {item_type.name!r} of "
                    f"TRAVERSE_EXTRACT has no field {field!r}",
                )
