"""``traverse-snapshot:`` provenance references (docs/snapshots.md, "sourceRef").

Built byte-identically to Traverse's ``buildSnapshotSourceRef``::

    "traverse-snapshot:" + encodeURIComponent(sourceId) + "?"
        + new URLSearchParams({url, sha256: bodyHash, fetchedAt}).toString()

Parsed like ``parseSnapshotSourceRef``, except that a malformed percent-escape in
the id gives None where Traverse throws ``URIError`` (forage's choice). The parser
never raises, whatever it is given.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote_plus, unquote, unquote_plus

from traverse_crawl.utils.javascript import encode_uri_component, well_formed

if TYPE_CHECKING:
    from traverse_crawl.snapshots.model import Snapshot

PREFIX = "traverse-snapshot:"
_HEX = frozenset("0123456789abcdefABCDEF")


@dataclass(frozen=True)
class SourceRef:
    source_id: str
    url: str
    body_hash: str
    fetched_at: str


# URLSearchParams leaves only A-Z a-z 0-9 * - . _ unescaped and writes space as "+";
# every other ASCII character is one %XX escape.
_FORM_UNESCAPED = frozenset(string.ascii_letters + string.digits + "*-._")
_FORM_ESCAPES = {
    code: "+" if code == 0x20 else f"%{code:02X}"
    for code in range(128)
    if chr(code) not in _FORM_UNESCAPED
}


def _form_encode(value: str) -> str:
    # An ASCII value (every URL, hash and time of a page but an IRI's) in one C pass:
    # quote_plus walks it character by character in Python, three values a page.
    if value.isascii():
        return value.translate(_FORM_ESCAPES)
    # quote_plus also keeps "~", which URLSearchParams writes as %7E. Its values are
    # USVStrings: a lone surrogate is U+FFFD, never an error.
    return quote_plus(well_formed(value), safe="*").replace("~", "%7E")


def build_source_ref(snapshot: Snapshot) -> str:
    """The ref of a snapshot; ``fromCache``/``notModified`` are not part of it, so a
    replayed page has the ref it was captured with."""
    query = "&".join(
        f"{key}={_form_encode(value)}"
        for key, value in (
            ("url", snapshot["url"]),
            ("sha256", snapshot["bodyHash"]),
            ("fetchedAt", snapshot["fetchedAt"]),
        )
    )
    return f"{PREFIX}{encode_uri_component(snapshot['sourceId'])}?{query}"


def decode_uri_component(value: str) -> str | None:
    """``decodeURIComponent``, but None where JavaScript throws ``URIError``.

    It throws on a ``%`` not followed by two hex digits and on escapes that are
    not well-formed UTF-8 (truncated, overlong, surrogates, above U+10FFFF);
    Python's strict UTF-8 decoder rejects exactly those byte sequences.
    """
    for index, char in enumerate(value):
        if char == "%":
            pair = value[index + 1 : index + 3]
            if len(pair) < 2 or not (pair[0] in _HEX and pair[1] in _HEX):
                return None
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        return None


def _form_decode(value: str) -> str:
    # application/x-www-form-urlencoded parsing: "+" is a space, a malformed "%"
    # stays as it is, invalid UTF-8 becomes U+FFFD (maximal subparts) — never an error.
    return unquote_plus(value, errors="replace")


def parse_search_params(query: str) -> list[tuple[str, str]]:
    """``[...new URLSearchParams(query)]``: one leading ``?`` is dropped."""
    text = well_formed(query)
    if text.startswith("?"):
        text = text[1:]
    pairs = []
    for part in text.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((_form_decode(name), _form_decode(value)))
    return pairs


def parse_source_ref(ref: object) -> SourceRef | None:
    """Parse tolerantly: None for anything malformed, never an exception."""
    if not isinstance(ref, str) or not ref.startswith(PREFIX):
        return None
    rest = ref[len(PREFIX) :]
    raw_id, question, query = rest.partition("?")
    if not question:
        return None
    source_id = decode_uri_component(raw_id)
    if source_id is None:
        return None
    params: dict[str, str] = {}
    for name, value in parse_search_params(query):
        params.setdefault(name, value)  # URLSearchParams.get: the first one wins
    url, body_hash, fetched_at = params.get("url"), params.get("sha256"), params.get("fetchedAt")
    if not url or not body_hash or not fetched_at:
        return None
    return SourceRef(source_id, url, body_hash, fetched_at)
