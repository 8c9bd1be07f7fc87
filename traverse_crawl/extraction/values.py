"""From a matched text to a field's value: ``re``, then ``url``, then ``type`` (docs/extraction.md).

Each step either gives the next value or says why there is none; the same function
re-derives values for ``scrapy extract --verify``.
"""

from __future__ import annotations

import re
from typing import Any

import regex

from traverse_crawl.fetch import urls

# "1,299.00", "1299", "-3.5", "+0.25", ".5": an optional sign, digits (in groups of
# three separated by commas, or not grouped), an optional decimal point and digits.
_NUMBER = re.compile(r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)")
_INTEGER = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)")
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


class NoValue(Exception):
    """The text gives no value; ``str()`` is the reason kept in the evidence."""


def apply_pattern(
    pattern: regex.Pattern[str] | None, text: str, timeout: float | None = None
) -> str:
    """The first group of ``pattern`` (the whole match when it has no group)."""
    if pattern is None:
        return text
    match = pattern.search(text, timeout=timeout, concurrent=True)
    if match is None:
        raise NoValue(f"the text does not match re {pattern.pattern!r}")
    if pattern.groups:
        group = match.group(1)
        if group is None:
            raise NoValue(f"the first group of re {pattern.pattern!r} took no part in the match")
        return str(group)
    return str(match.group(0))


def resolve_url(text: str, base: str) -> str:
    resolved = urls.parse(text.strip(), base)
    if resolved is None:
        raise NoValue(f"not a URL relative to {base}")
    return str(resolved.href)


def convert(text: str, value_type: str) -> Any:
    """``string``: the text without surrounding whitespace; ``number``: a float;
    ``integer``: an int; ``boolean``: true/false, yes/no, on/off, 1/0 in any case."""
    stripped = text.strip()
    if value_type == "string":
        return stripped
    if value_type == "number":
        if not _NUMBER.fullmatch(stripped):
            raise NoValue(f"not a number: {stripped!r}")
        return float(stripped.replace(",", ""))
    if value_type == "integer":
        if not _INTEGER.fullmatch(stripped):
            raise NoValue(f"not an integer: {stripped!r}")
        return int(stripped.replace(",", ""))
    lowered = stripped.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise NoValue(f"not a boolean: {stripped!r}")


def derive(
    text: str,
    pattern: regex.Pattern[str] | None,
    url: bool,
    value_type: str,
    base: str,
    timeout: float | None = None,
) -> Any:
    """A field's value from its matched text, or ``NoValue`` saying why not."""
    picked = apply_pattern(pattern, text, timeout)
    if url:
        return resolve_url(picked, base)
    value = convert(picked, value_type)
    if value == "":
        raise NoValue("the text is empty")
    return value
