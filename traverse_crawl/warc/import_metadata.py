"""traverse_crawl's ``metadata`` records, read back by ``scrapy warc import`` as any input.

A capture's or an export's ``metadata`` record (``warc/export.py``'s fields) restores
what a response record cannot say: the page id's URL, ``fetchedAt``, status,
redirects, validators. Anyone can write a record that claims to be one, so each
field is checked before it reaches a snapshot (docs/web-archives.md): a record with
one wrong field is not used at all, and the import names it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from warcio.recordloader import ArcWarcRecord

from traverse_crawl.fetch import urls

# Ours are a few hundred bytes; a redirect chain of long URLs stays far below this.
MAX_BLOCK = 1 << 20
# Date.prototype.toISOString() of a year 0-9999: what the store's file names hold.
_FETCHED_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_STATUS = re.compile(r"[1-5]\d\d")


def read_fields(record: ArcWarcRecord) -> dict[str, str] | str:
    """The ``application/warc-fields`` lines of a ``metadata`` record, or why not."""
    block = record.content_stream().read(MAX_BLOCK + 1)
    if len(block) > MAX_BLOCK:
        return f"metadata record larger than {MAX_BLOCK} bytes"
    out: dict[str, str] = {}
    for line in block.decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition(":")
        if sep:
            out[name.strip()] = value.strip()
    return out


def problem(fields: dict[str, str]) -> str | None:
    """Why the fields of a record claiming to be traverse_crawl's cannot be used, or None."""
    page_url = fields.get("pageId", "").partition("::")[2]
    if not page_url or urls.normalize(page_url) != page_url:
        return f"pageId {_shown(fields.get('pageId', ''))} is not a page id"
    fetched = fields.get("fetchedAt", "")
    if fetched and not _is_fetched_at(fetched):
        return f"fetchedAt {_shown(fetched)} is not an ISO 8601 UTC time"
    status = fields.get("status", "")
    if status and not _STATUS.fullmatch(status):
        return f"status {_shown(status)} is not an HTTP status"
    if fields.get("rendered", "") not in ("", "true"):
        return f"rendered {_shown(fields['rendered'])} is not true"
    redirects = fields.get("redirects", "")
    if redirects and _redirects(redirects) is None:
        return f"redirects {_shown(redirects)} is not a JSON list of URLs"
    return None


def redirects(fields: dict[str, str]) -> list[str] | None:
    """The redirects of fields that passed ``problem``."""
    text = fields.get("redirects", "")
    return _redirects(text) if text else None


def _is_fetched_at(text: str) -> bool:
    if not _FETCHED_AT.fullmatch(text):
        return False
    try:
        datetime.fromisoformat(text[:-1])
    except ValueError:  # 2020-13-45T99:...
        return False
    return True


def _redirects(text: str) -> list[str] | None:
    try:
        value: Any = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list) or not all(
        isinstance(url, str) and urls.normalize(url) is not None for url in value
    ):
        return None
    return value


def clipped(value: str, width: int) -> str:
    """A value from an archive, cut for a warning: an archive's can be as long as its
    header line."""
    return value if len(value) <= width else value[:width] + "..."


def _shown(value: str, width: int = 60) -> str:
    """A field's value in a warning: quoted, and cut when long."""
    return repr(clipped(value, width))
