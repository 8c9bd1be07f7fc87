"""The extraction file (``TRAVERSE_EXTRACT``): read, checked and compiled once (docs/extraction.md).

A TOML or JSON file of item types. Every selector is translated and compiled here
(CSS with parsel's translator, which gives ``::text`` and ``::attr()``; XPath with
lxml) and every regular expression compiled, so a bad rule is a ``ConfigError``
naming ``TRAVERSE_EXTRACT``, the item type and the field before any request.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import sys
from dataclasses import dataclass
from typing import Any, Literal

import parsel  # noqa: F401  (registers parsel's XPath functions, has-class among them)
import regex
from cssselect import SelectorError
from lxml import etree
from parsel.csstranslator import HTMLTranslator

from traverse_crawl.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SETTING = "TRAVERSE_EXTRACT"
ValueType = Literal["string", "number", "integer", "boolean"]
VALUE_TYPES: tuple[ValueType, ...] = ("string", "number", "integer", "boolean")
TYPE_KEYS = frozenset({"name", "paths", "require", "each", "fields"})
FIELD_KEYS = frozenset({"selector", "re", "many", "url", "type"})
# parsel's XPath namespaces (EXSLT regular expressions and sets), so an XPath
# selector means here what it means in a Scrapy callback.
NAMESPACES: dict[str, str] = {
    "re": "http://exslt.org/regular-expressions",
    "set": "http://exslt.org/sets",
}
_TRANSLATOR = HTMLTranslator()


@dataclass(frozen=True)
class Selector:
    """A selector as written (``css:…`` / ``xpath:…``) and its compiled XPath."""

    written: str
    xpath: str
    compiled: etree.XPath


@dataclass(frozen=True)
class FieldRule:
    name: str
    selector: Selector
    pattern: regex.Pattern[str] | None = None
    many: bool = False
    url: bool = False
    type: ValueType = "string"


@dataclass(frozen=True)
class ItemType:
    name: str
    paths: tuple[str, ...]  # URL path globs (fnmatch), or () for every page
    path_patterns: tuple[re.Pattern[str], ...]
    require: Selector | None
    each: Selector | None
    fields: tuple[FieldRule, ...]

    def matches_path(self, path: str) -> bool:
        return not self.path_patterns or any(p.match(path) for p in self.path_patterns)


@dataclass(frozen=True)
class Rules:
    """The compiled extraction file; ``extractor`` is ``sha256:`` of its bytes."""

    types: tuple[ItemType, ...]
    extractor: str
    source: str  # the file it was read from, or "" for rules given as data
    raw: bytes = b""  # the file's bytes (compiled again in ``scrapy extract``'s workers)


def load_rules(path: str) -> Rules:
    """Read and compile the extraction file at ``path`` (TOML, or JSON by its content)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise ConfigError(SETTING, f"cannot read {path!r}: {exc.strerror or exc}") from None
    return rules_from_bytes(raw, path)


def rules_from_bytes(raw: bytes, source: str = "") -> Rules:
    """Compile an extraction file's bytes; JSON when it starts with ``{``, else TOML."""
    where = f" {source!r}" if source else ""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ConfigError(SETTING, f"the file{where} is not UTF-8 text") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(SETTING, f"the file{where} is not valid JSON: {exc}") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(SETTING, f"the file{where} is not valid TOML: {exc}") from None
    rules = compile_rules(data, "sha256:" + hashlib.sha256(raw).hexdigest(), source)
    return Rules(rules.types, rules.extractor, rules.source, raw)


def compile_rules(data: Any, extractor: str, source: str = "") -> Rules:
    if not isinstance(data, dict):
        raise ConfigError(SETTING, "expected a table with a 'types' list")
    unknown = sorted(set(data) - {"types"})
    if unknown:
        raise ConfigError(SETTING, f"unknown key {unknown[0]!r} (expected 'types')")
    types = data.get("types")
    if not isinstance(types, list) or not types:
        raise ConfigError(SETTING, "expected 'types', a non-empty list of item types")
    compiled: list[ItemType] = []
    names: set[str] = set()
    for position, entry in enumerate(types):
        item_type = _compile_type(entry, position)
        if item_type.name in names:
            raise ConfigError(SETTING, f"type {item_type.name!r}: the name is used twice")
        names.add(item_type.name)
        compiled.append(item_type)
    return Rules(tuple(compiled), extractor, source)


def _compile_type(entry: Any, position: int) -> ItemType:
    if not isinstance(entry, dict):
        raise ConfigError(SETTING, f"types[{position}]: expected a table")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(SETTING, f"types[{position}]: 'name' must be a non-empty string")
    where = f"type {name!r}"
    unknown = sorted(set(entry) - TYPE_KEYS)
    if unknown:
        raise ConfigError(SETTING, f"{where}: unknown key {unknown[0]!r}")
    paths = entry.get("paths", [])
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise ConfigError(SETTING, f"{where}: 'paths' must be a list of URL path globs")
    require = _optional_selector(entry, "require", where)
    each = _optional_selector(entry, "each", where)
    fields = entry.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ConfigError(SETTING, f"{where}: 'fields' must be a non-empty table")
    rules = tuple(_compile_field(field, spec, where) for field, spec in fields.items())
    patterns = tuple(re.compile(fnmatch.translate(glob)) for glob in paths)
    return ItemType(name, tuple(paths), patterns, require, each, rules)


def _optional_selector(entry: dict[str, Any], key: str, where: str) -> Selector | None:
    if key not in entry:
        return None
    return compile_selector(entry[key], f"{where}, {key!r}")


def _compile_field(name: str, spec: Any, where: str) -> FieldRule:
    here = f"{where}, field {name!r}"
    if isinstance(spec, str):
        return FieldRule(name, compile_selector(spec, here))
    if not isinstance(spec, dict):
        raise ConfigError(SETTING, f"{here}: expected a selector string or a table")
    unknown = sorted(set(spec) - FIELD_KEYS)
    if unknown:
        raise ConfigError(SETTING, f"{here}: unknown key {unknown[0]!r}")
    if "selector" not in spec:
        raise ConfigError(SETTING, f"{here}: 'selector' is missing")
    selector = compile_selector(spec["selector"], here)
    pattern = None
    if "re" in spec:
        if not isinstance(spec["re"], str):
            raise ConfigError(SETTING, f"{here}: 're' must be a string")
        pattern = compile_pattern(spec["re"], here)
    flags = {}
    for key in ("many", "url"):
        value = spec.get(key, False)
        if not isinstance(value, bool):
            raise ConfigError(SETTING, f"{here}: {key!r} must be true or false")
        flags[key] = value
    value_type = spec.get("type", "string")
    if value_type not in VALUE_TYPES:
        accepted = ", ".join(repr(t) for t in VALUE_TYPES)
        raise ConfigError(SETTING, f"{here}: 'type' must be one of {accepted}, not {value_type!r}")
    if flags["url"] and value_type != "string":
        raise ConfigError(SETTING, f"{here}: 'url' values are strings; drop 'type'")
    return FieldRule(name, selector, pattern, flags["many"], flags["url"], value_type)


def compile_selector(written: Any, where: str) -> Selector:
    """``css:…`` or ``xpath:…`` compiled; a ``ConfigError`` naming ``where`` otherwise."""
    if not isinstance(written, str):
        raise ConfigError(SETTING, f"{where}: a selector must be a string, not {written!r}")
    kind, _, query = written.partition(":")
    query = query.strip()
    if kind not in ("css", "xpath") or not query:
        raise ConfigError(SETTING, f"{where}: a selector is 'css:…' or 'xpath:…', not {written!r}")
    if kind == "css":
        try:
            xpath = _TRANSLATOR.css_to_xpath(query)
        except (SelectorError, ValueError, NotImplementedError) as exc:
            raise ConfigError(SETTING, f"{where}: invalid CSS selector {query!r}: {exc}") from None
    else:
        xpath = query
    try:
        compiled = etree.XPath(xpath, namespaces=NAMESPACES, smart_strings=True)
    except etree.XPathSyntaxError as exc:
        raise ConfigError(SETTING, f"{where}: invalid XPath {query!r}: {exc}") from None
    return Selector(written, xpath, compiled)


def compile_pattern(pattern: str, where: str) -> regex.Pattern[str]:
    """A regular expression with the ``regex`` module (``re``'s syntax, VERSION0), which
    can be given a timeout: Python's ``re`` cannot be stopped once it backtracks."""
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ConfigError(
            SETTING, f"{where}: invalid regular expression {pattern!r}: {exc}"
        ) from None
