"""What Node and JavaScript do to strings, for files both implementations share.

Traverse's store is written by Node: ids are hashed as Node encodes them, base64
bodies are decoded as leniently as ``Buffer.from``, and snapshots are ordered by
``localeCompare``. These are the Python equivalents (docs/snapshots.md).
"""

from __future__ import annotations

import base64
import functools
import re
from urllib.parse import quote

_CANONICAL_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def js_string(value: str) -> str:
    """The string JavaScript sees: surrogate pairs written as two code points join."""
    if value.isascii():  # no surrogate to join (a constant-time check): most ids and URLs
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# encodeURIComponent leaves A-Z a-z 0-9 and - _ . ! ~ * ' ( ) as they are; every other
# ASCII character is one %XX escape.
_URI_COMPONENT_ESCAPES = {
    code: f"%{code:02X}"
    for code in range(128)
    if not (chr(code).isascii() and chr(code).isalnum()) and chr(code) not in "-_.!~*'()"
}


def encode_uri_component(value: str) -> str:
    """JavaScript's ``encodeURIComponent`` (page ids, refs), which throws on a lone surrogate.

    Raises ``ValueError`` (``UnicodeEncodeError``) where JavaScript throws ``URIError``.
    """
    # An ASCII value (every page id of an ASCII seed and URL) in one C pass; quote
    # walks it in Python, once a page for its sourceRef.
    if value.isascii():
        return value.translate(_URI_COMPONENT_ESCAPES)
    return quote(js_string(value), safe="!~*'()")


def well_formed(value: str) -> str:
    """``String.prototype.toWellFormed``: each lone surrogate becomes U+FFFD."""
    if value.isascii():
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8(value: str) -> bytes:
    """Node's UTF-8 encoding of a string (``Buffer.from``, ``hash.update``)."""
    return well_formed(value).encode("utf-8")


def decode_base64(text: str) -> bytes:
    """``Buffer.from(text, "base64")`` of Node: lenient, never an error.

    Characters outside both base64 alphabets are skipped, decoding stops at the
    first ``=``, and an incomplete final group yields what its bits hold.
    """
    if len(text) % 4 == 0 and _CANONICAL_BASE64.fullmatch(text):
        return base64.b64decode(text)
    out = bytearray()
    bits = count = 0
    for char in text:
        if char == "=":
            break
        value = _BASE64_VALUES.get(char)
        if value is None:
            continue
        bits = (bits << 6 | value) & 0xFFFF
        count += 6
        if count >= 8:
            count -= 8
            out.append(bits >> count & 0xFF)
    return bytes(out)


_BASE64_VALUES = {
    char: index
    for index, char in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}
_BASE64_VALUES.update({"-": 62, "_": 63})


# ICU's root collation of ASCII, as Node's ``localeCompare`` applies it (checked
# against Node 20 / ICU 78 on random strings): these code points are ignored,
# and the others sort in this order at the first level, where a letter's two
# cases are equal; at the third level a lower-case letter comes first.
_IGNORED = frozenset([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F])
_ICU_ASCII_ORDER = (
    "\t\n\x0b\x0c\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789"
    "aAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ"
)


def _build_weights() -> dict[str, tuple[int, int]]:
    weights: dict[str, tuple[int, int]] = {}
    rank = 0
    for char in _ICU_ASCII_ORDER:
        if char.isupper():
            weights[char] = (weights[char.lower()][0], 1)
        else:
            rank += 1
            weights[char] = (rank, 0)
    return weights


_WEIGHTS = _build_weights()
_NON_ASCII_BASE = 0x100


@functools.lru_cache(maxsize=4096)
def _collation_key(value: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Exact for ASCII; other characters sort after ASCII by code point (an
    approximation: Traverse itself only writes ISO timestamps and hex hashes)."""
    primary: list[int] = []
    tertiary: list[int] = []
    for char in value:
        code = ord(char)
        if code in _IGNORED:
            continue
        first, third = _WEIGHTS.get(char, (_NON_ASCII_BASE + code, 0))
        primary.append(first)
        tertiary.append(third)
    return tuple(primary), tuple(tertiary)


def locale_compare(left: str, right: str) -> int:
    """JavaScript's ``left.localeCompare(right)`` sign, for the ``en-US`` default."""
    a, b = _collation_key(left), _collation_key(right)
    return (a > b) - (a < b)
