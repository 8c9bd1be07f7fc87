"""One table for every setting: each is one field of a frozen config dataclass.

A config class declares each setting once, as an attribute whose annotation is the
parsed value's type and whose value says the rest::

    max_pages: int = setting("TRAVERSE_MAX_PAGES", 20, parse_whole)

the setting's name, its default (the only place it lives: the add-on sets it, and
docs/settings.md lists it) and the parser, which turns what the user wrote into the
attribute's value or raises ``ConfigError`` naming the setting. ``group`` nests
another such class (the distributed crawl's settings), whose settings are part of the
same table. ``read_settings`` parses a class's own settings from a settings object,
``table`` lists every one. Pure: no Scrapy, and nothing of the features.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar, cast

T = TypeVar("T")
Parser = Callable[[str, Any], T]

_SETTING = "traverse_crawl.setting"  # the key of a field's metadata
_GROUP = "traverse_crawl.group"


class SettingsLike(Protocol):
    """What is read from a settings object: Scrapy's ``Settings``, or a plain dict."""

    def get(self, name: str, default: Any = None) -> Any: ...


class Setting(NamedTuple):
    """One row of the table."""

    name: str  # the setting, e.g. TRAVERSE_MAX_PAGES
    attr: str  # the config's attribute
    default: Any  # what an unset setting is (parsed like a value the user gives)
    parse: Parser[Any]
    # False: the add-on leaves it unset (REDIS_URL: unset means a single-process crawl).
    addon_default: bool


def setting(
    name: str,
    default: Any,
    parse: Parser[T],
    *,
    addon_default: bool = True,
    compare: bool = True,
) -> T:
    """A config attribute read from the setting ``name``: a dataclass field without a
    default of its own (every value comes from ``read_settings``). Typed as the parser's
    result, so mypy checks the parser against the attribute's annotation."""
    row = (name, default, parse, addon_default)
    return cast("T", dataclasses.field(metadata={_SETTING: row}, compare=compare))


def group(cls: type[T]) -> T:
    """A config attribute that is another config class, its settings part of the table."""
    return cast("T", dataclasses.field(metadata={_GROUP: cls}))


def own_settings(cls: type) -> tuple[Setting, ...]:
    """The settings of ``cls``'s own fields, in their order (not its groups')."""
    rows = []
    for field in dataclasses.fields(cls):
        if _SETTING in field.metadata:
            name, default, parse, addon_default = field.metadata[_SETTING]
            rows.append(Setting(name, field.name, default, parse, addon_default))
    return tuple(rows)


def table(cls: type) -> tuple[Setting, ...]:
    """Every setting of ``cls``: its own, then each group's."""
    rows = list(own_settings(cls))
    for field in dataclasses.fields(cls):
        if _GROUP in field.metadata:
            rows.extend(table(field.metadata[_GROUP]))
    return tuple(rows)


def read_settings(rows: tuple[Setting, ...], settings: SettingsLike) -> dict[str, Any]:
    """Each row's attribute, parsed from its setting, or from its default when unset."""
    values = {}
    for name, attr, default, parse, _ in rows:
        value = settings.get(name)
        values[attr] = parse(name, default if value is None else value)
    return values
