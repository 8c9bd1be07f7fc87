"""``traverse-snapshot:`` provenance references (SPEC §14), byte-identical to Traverse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus, unquote, unquote_plus

from traverse_crawl.core.urls import encode_uri_component

PREFIX = "traverse-snapshot:"


def _form_encode(value: str) -> str:
    # URLSearchParams leaves only A-Z a-z 0-9 * - . _ unescaped; quote_plus also
    # keeps "~", which URLSearchParams writes as %7E (SPEC §14).
    return quote_plus(value, safe="*").replace("~", "%7E")


def build_source_ref(snapshot: dict[str, Any]) -> str:
    query = "&".join(
        f"{key}={_form_encode(str(value))}"
        for key, value in (
            ("url", snapshot["url"]),
            ("sha256", snapshot["bodyHash"]),
            ("fetchedAt", snapshot["fetchedAt"]),
        )
    )
    return f"{PREFIX}{encode_uri_component(snapshot['sourceId'])}?{query}"


@dataclass(frozen=True)
class SourceRef:
    source_id: str
    url: str
    body_hash: str
    fetched_at: str


def _decode_uri_component(value: str) -> str | None:
    """``decodeURIComponent``, but None instead of a URIError (SPEC §14 step 3)."""
    try:
        decoded = unquote(value, errors="strict")
    except UnicodeDecodeError:
        return None
    # unquote leaves malformed escapes such as "%E0%A4%A" or a bare "%" as text;
    # decodeURIComponent rejects them, and so do we.
    stripped = value
    for index in range(len(stripped)):
        if stripped[index] == "%":
            pair = stripped[index + 1 : index + 3]
            if len(pair) < 2 or any(c not in "0123456789abcdefABCDEF" for c in pair):
                return None
    return decoded


def parse_source_ref(ref: object) -> SourceRef | None:
    """Parse tolerantly: None for anything malformed, never an exception."""
    if not isinstance(ref, str) or not ref.startswith(PREFIX):
        return None
    rest = ref[len(PREFIX) :]
    if "?" not in rest:
        return None
    raw_id, query = rest.split("?", 1)
    source_id = _decode_uri_component(raw_id)
    if source_id is None:
        return None
    params: dict[str, str] = {}
    for part in query.split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        try:
            key = unquote_plus(key, errors="strict")
            value = unquote_plus(value, errors="strict")
        except UnicodeDecodeError:
            return None
        params.setdefault(key, value)
    url, body_hash, fetched_at = params.get("url"), params.get("sha256"), params.get("fetchedAt")
    if not url or not body_hash or not fetched_at:
        return None
    return SourceRef(source_id, url, body_hash, fetched_at)
