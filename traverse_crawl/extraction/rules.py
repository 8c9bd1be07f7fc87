"""The extraction file (``TRAVERSE_EXTRACT``): read, checked and compiled once (docs/extraction.md).

A TOML or JSON file of item types. Every selector is translated and compiled here
(CSS with parsel's translator, which gives ``::text`` and ``::attr()``; XPath with
lxml) and every regular expression compiled, so a bad rule is a ``ConfigError``
naming ``TRAVERSE_EXTRACT``, the item type and the field before any request.

libxml2 looks a function, a namespace prefix or a variable up only when the XPath
is evaluated, and only for the parts it reaches: ``normalise-space(.)`` compiles.
So each selector is also evaluated once against a small page, and every function
it calls, prefix it names and variable it reads is looked up the same way
(``_unresolved``), wherever it sits in the expression.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from dataclasses import dataclass
from typing import Any, Literal

import parsel  # noqa: F401  (registers parsel's XPath functions, has-class among them)
import regex
from cssselect import SelectorError
from lxml import etree
from parsel.csstranslator import HTMLTranslator

from traverse_crawl.config.data_file import parse_data_file, read_data_file
from traverse_crawl.errors import ConfigError

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
# A message quotes at most this much of what the file wrote (a selector, a name).
SHOWN = 120
# A small page each selector is evaluated against once, at start-up.
_PROBE_PAGE = (
    b"<html><head><title>t</title></head><body><div class='c' id='i'><h2>t</h2>"
    b"<p class='p'>1<a href='/a'>a</a></p><ul><li>x</li></ul></div></body></html>"
)
# XPath 1.0's lexical structure (XPath 1.0, 3.7): enough to find each function
# call, name test and variable reference outside string literals.
_NCNAME = r"[^\W\d][\w.\-]*"
_XPATH_TOKEN = re.compile(
    rf"""\s*(?:
      (?P<literal>"[^"]*"|'[^']*')
    | (?P<number>\d+(?:\.\d*)?|\.\d+)
    | \$(?P<variable>{_NCNAME}(?::{_NCNAME})?)
    | (?P<name>{_NCNAME}(?::(?:{_NCNAME}|\*))?)
    | (?P<axis>::)
    | (?P<operator>//|/|\||\+|-|!=|<=|>=|=|<|>)
    | (?P<star>\*)
    | (?P<punct>\.\.|\.|@|\(|\)|\[|\]|,)
    )""",
    re.X,
)
_NODE_TYPES = frozenset({"comment", "text", "processing-instruction", "node"})
_OPERATOR_NAMES = frozenset({"and", "or", "mod", "div"})
# After these (or an operator) a name or ``*`` is a name test, not an operator.
_BEFORE_NAME_TEST = frozenset({"@", "::", "(", "[", ","})


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


def shown(value: Any) -> str:
    """``repr(value)``, cut to ``SHOWN`` characters: a message stays one short line."""
    try:
        text = repr(value)
    except RecursionError:  # pragma: no cover - values are nested at most JSON's depth
        text = f"<{type(value).__name__}>"
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def load_rules(path: str) -> Rules:
    """Read and compile the extraction file at ``path`` (TOML, or JSON by its content)."""
    return rules_from_bytes(read_data_file(SETTING, path), path)


def rules_from_bytes(raw: bytes, source: str = "") -> Rules:
    """Compile an extraction file's bytes; JSON when it starts with ``{``, else TOML."""
    data = parse_data_file(SETTING, raw, source)
    rules = compile_rules(data, "sha256:" + hashlib.sha256(raw).hexdigest(), source)
    return Rules(rules.types, rules.extractor, rules.source, raw)


def compile_rules(data: Any, extractor: str, source: str = "") -> Rules:
    if not isinstance(data, dict):
        raise ConfigError(SETTING, "expected a table with a 'types' list")
    unknown = sorted(set(data) - {"types"})
    if unknown:
        raise ConfigError(SETTING, f"unknown key {shown(unknown[0])} (expected 'types')")
    types = data.get("types")
    if not isinstance(types, list) or not types:
        raise ConfigError(SETTING, "expected 'types', a non-empty list of item types")
    compiled: list[ItemType] = []
    names: set[str] = set()
    for position, entry in enumerate(types):
        item_type = _compile_type(entry, position)
        if item_type.name in names:
            raise ConfigError(SETTING, f"type {shown(item_type.name)}: the name is used twice")
        names.add(item_type.name)
        compiled.append(item_type)
    return Rules(tuple(compiled), extractor, source)


def _compile_type(entry: Any, position: int) -> ItemType:
    if not isinstance(entry, dict):
        raise ConfigError(SETTING, f"types[{position}]: expected a table")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(SETTING, f"types[{position}]: 'name' must be a non-empty string")
    where = f"type {shown(name)}"
    unknown = sorted(set(entry) - TYPE_KEYS)
    if unknown:
        raise ConfigError(SETTING, f"{where}: unknown key {shown(unknown[0])}")
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
    here = f"{where}, field {shown(name)}"
    if isinstance(spec, str):
        return FieldRule(name, compile_selector(spec, here))
    if not isinstance(spec, dict):
        raise ConfigError(SETTING, f"{here}: expected a selector string or a table")
    unknown = sorted(set(spec) - FIELD_KEYS)
    if unknown:
        raise ConfigError(SETTING, f"{here}: unknown key {shown(unknown[0])}")
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
        raise ConfigError(
            SETTING, f"{here}: 'type' must be one of {accepted}, not {shown(value_type)}"
        )
    if flags["url"] and value_type != "string":
        raise ConfigError(SETTING, f"{here}: 'url' values are strings; drop 'type'")
    return FieldRule(name, selector, pattern, flags["many"], flags["url"], value_type)


def compile_selector(written: Any, where: str) -> Selector:
    """``css:…`` or ``xpath:…`` compiled and tried once on a small page; a
    ``ConfigError`` naming ``where`` otherwise."""
    if not isinstance(written, str):
        raise ConfigError(SETTING, f"{where}: a selector must be a string, not {shown(written)}")
    kind, _, query = written.partition(":")
    query = query.strip()
    if kind not in ("css", "xpath") or not query:
        raise ConfigError(
            SETTING, f"{where}: a selector is 'css:…' or 'xpath:…', not {shown(written)}"
        )
    what = f"CSS selector {shown(query)}" if kind == "css" else f"XPath {shown(query)}"
    if kind == "css":
        try:
            xpath = _TRANSLATOR.css_to_xpath(query)
        except (SelectorError, ValueError, NotImplementedError) as exc:
            raise ConfigError(SETTING, f"{where}: invalid {what}: {_cut(exc)}") from None
        except RecursionError:
            raise ConfigError(SETTING, f"{where}: invalid {what}: nested too deeply") from None
    else:
        xpath = query
    try:
        compiled = etree.XPath(xpath, namespaces=NAMESPACES, smart_strings=True)
    except (etree.XPathSyntaxError, ValueError) as exc:  # ValueError: a NUL, a control character
        raise ConfigError(SETTING, f"{where}: invalid {what}: {_cut(exc)}") from None
    except RecursionError:
        raise ConfigError(SETTING, f"{where}: invalid {what}: nested too deeply") from None
    failure = _evaluation_failure(compiled, xpath)
    if failure is not None:
        raise ConfigError(SETTING, f"{where}: invalid {what}: {failure}")
    return Selector(written, xpath, compiled)


def evaluation_error(exc: BaseException) -> str:
    """Why evaluating a selector failed, in a few words (lxml's message, or the
    exception an XPath extension function raised: EXSLT's ``re:``, ``has-class``)."""
    if isinstance(exc, re.error):
        return f"invalid regular expression in the XPath: {_cut(exc)}"
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return _cut(exc) or type(exc).__name__


def _evaluation_failure(compiled: etree.XPath, xpath: str) -> str | None:
    """Why the XPath fails when evaluated, or None: once on a small page, and each
    function, prefix and variable it names looked up, wherever it sits."""
    root = etree.fromstring(_PROBE_PAGE, etree.HTMLParser())
    contexts = [root, *root.iterfind(".//p")]  # the page, and an element as ``each`` gives
    try:
        for context in contexts:
            compiled(context)
    except Exception as exc:  # lxml's, or an extension function's own
        return evaluation_error(exc)
    return _unresolved(xpath, root)


def _unresolved(xpath: str, root: etree._Element) -> str | None:
    """The first function, namespace prefix or variable that ``xpath`` names and the
    evaluator would not find (so a predicate that the small page never reaches is
    checked too), or None. Each is looked up by evaluating it alone: libxml2 (with
    lxml's and parsel's registered functions) says what exists."""
    previous: str | None = None  # the kind of the token before, for XPath's 3.7 rule
    probes: dict[str, str] = {}  # probe expression -> what it checks
    position = 0
    while position < len(xpath):
        match = _XPATH_TOKEN.match(xpath, position)
        if match is None or match.end() == position:
            break  # trailing whitespace, or a character the expression compiled with
        position = match.end()
        kind = match.lastgroup or ""
        text = match.group(kind)
        # XPath 1.0, 3.7: after a value a name is an operator (and, or, mod, div) and ``*``
        # multiplies; elsewhere they are name tests.
        operand = previous is not None and previous not in _BEFORE_NAME_TEST | {"operator"}
        if kind == "variable":
            probes.setdefault(f"${text}", f"undefined variable ${text}")
        elif kind == "name" and not (operand and text in _OPERATOR_NAMES):
            following = xpath[position:].lstrip()
            if following.startswith("("):
                if text not in _NODE_TYPES:
                    probes.setdefault(f"{text}()", f"unknown function {text}()")
            elif not following.startswith("::") and ":" in text:
                probes.setdefault(f"/self::{text}", f"undefined namespace prefix in {text}")
        if kind == "punct" or kind == "axis":
            previous = text
        elif kind == "operator" or (kind == "name" and operand and text in _OPERATOR_NAMES):
            previous = "operator"
        elif kind == "star":
            previous = "operator" if operand else "value"
        else:
            previous = "value"
    for probe, problem in probes.items():
        try:
            etree.XPath(probe, namespaces=NAMESPACES)(root)
        except etree.XPathEvalError as exc:
            if str(exc) in ("Unregistered function", "Undefined namespace prefix",
                            "Undefined variable"):  # fmt: skip
                return problem
        except Exception:  # called without its arguments: it exists
            continue
    return None


def _cut(exc: BaseException | str) -> str:
    """An exception's message (or a text) on one line, cut to ``SHOWN`` characters."""
    text = " ".join(str(exc).split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def compile_pattern(pattern: str, where: str) -> regex.Pattern[str]:
    """A regular expression with the ``regex`` module (``re``'s syntax, VERSION0), which
    can be given a timeout: Python's ``re`` cannot be stopped once it backtracks."""
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, ValueError, OverflowError) as exc:
        raise ConfigError(
            SETTING, f"{where}: invalid regular expression {shown(pattern)}: {_cut(exc)}"
        ) from None
    except RecursionError:
        raise ConfigError(
            SETTING, f"{where}: invalid regular expression {shown(pattern)}: nested too deeply"
        ) from None
