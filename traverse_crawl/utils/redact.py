"""Passwords out of what is printed: the userinfo of URLs, plain or percent-encoded.

``redact_url`` for one URL (ada-url parses it); ``redact_text`` for any text that may
hold URLs (a log line, an item's repr, a page id, where a URL may be percent-encoded
once or more). A password becomes ``***``; a user name without a password is taken for
a token (``https://TOKEN@host/``) and becomes ``***`` too; a user name beside a
password is kept, so the line still says which account.
"""

from __future__ import annotations

import re

import ada_url

MASK = "***"

# ``scheme://userinfo@``: in a URL the userinfo cannot hold "/", "?", "#" or "@"
# (a WHATWG serialisation percent-encodes them), nor does text around a URL.
_PLAIN = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,31}://)(?P<userinfo>[^\s/?#@\"'<>\\]+)@")
# The same percent-encoded n times (a page id encodes its seed id, a sourceRef encodes
# a page id): "%3A%2F%2F" ... "%40", each "%" followed by n-1 "25"s. The userinfo's own
# escapes are one level deeper, so they never read as its delimiters.
_ENCODED = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]{0,31}%(?P<level>(?:25)*)3A%(?P=level)2F%(?P=level)2F)"
    r"(?P<userinfo>(?:(?!%(?P=level)(?:2F|3F|23|40))[^\s/?#@\"'<>\\])+)"
    r"%(?P=level)40",
    re.IGNORECASE,
)

# What a masked URL must hold, found far faster than by the patterns above: their
# "@" (plain) and their encoded "@" (``%40``, ``%2540``, ...).
_ENCODED_AT = re.compile(r"%(?:25)*40", re.IGNORECASE)


def _masked(userinfo: str, colon: str) -> str:
    user, sep, _password = userinfo.partition(colon)
    return f"{user}{colon}{MASK}" if sep else MASK


def redact_url(url: str) -> str:
    """``url`` with its password (or lone user name) replaced by ``***``; unchanged
    when it has no userinfo. A URL that does not parse is redacted as text."""
    if "@" not in url:
        return url
    try:
        parsed = ada_url.URL(url)
    except (ValueError, TypeError):
        return redact_text(url)
    if parsed.password:
        parsed.password = MASK
    elif parsed.username:
        parsed.username = MASK
    else:
        return url
    return str(parsed.href)


def redact_text(text: str) -> str:
    """``text`` with the userinfo of every URL in it masked, percent-encoded ones too."""
    if "@" in text and "://" in text:
        text = _PLAIN.sub(lambda m: f"{m['scheme']}{_masked(m['userinfo'], ':')}@", text)
    if "%" in text and _ENCODED_AT.search(text):
        text = _ENCODED.sub(_encoded_mask, text)
    return text


def _encoded_mask(match: re.Match[str]) -> str:
    level = match["level"]
    colon = next(
        (c for c in (f"%{level}3A", f"%{level}3a") if c in match["userinfo"]), f"%{level}3A"
    )
    return f"{match['scheme']}{_masked(match['userinfo'], colon)}%{level}40"


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries a user name or password."""
    return redact_url(url) != url
