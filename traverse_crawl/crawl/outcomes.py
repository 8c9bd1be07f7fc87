"""A page's final Scrapy response → its snapshot, or a typed ``http-error``; and the
page's ``fetch`` object for the manifest.

Moved out of the spider, which keeps the BFS, so both stay readable.
"""

from __future__ import annotations

from typing import Any

from scrapy.http import Response

from traverse_crawl.errors import FetchError
from traverse_crawl.meta_keys import HINT, PAGE_ID, REDIRECTS, RENDER_ESCALATION, WARNINGS
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.model import Snapshot


def snapshot_of(response: Response) -> Snapshot | FetchError:
    """The page's snapshot from a final response (any 2xx), or its ``http-error``."""
    status = response.status
    if status == 304:
        return FetchError(
            "http-error",
            f"unexpected 304 Not Modified from {response.url} without validators "
            "from a matching prior snapshot",
            304,
        )
    if not 200 <= status < 300:
        return FetchError("http-error", f"HTTP {status} from {response.url}", status)
    meta = response.meta
    header = _header(response, b"Content-Type")
    # A rendered page is the browser's DOM serialised as UTF-8 HTML (docs/rendering.md).
    rendered = "playwright" in response.flags
    if rendered:
        header = "text/html; charset=utf-8"
    return snap.build_snapshot(
        source_id=meta[PAGE_ID],
        url=response.url,
        status=status,
        content_type="html" if rendered else snap.resolve_content_type(header, meta.get(HINT)),
        raw_body=response.body,
        content_type_header=header,
        redirects=meta.get(REDIRECTS),
        etag=_header(response, b"ETag"),
        last_modified=_header(response, b"Last-Modified"),
        rendered=rendered,
    )


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    if not value:
        return None
    return value.decode("latin-1")


def fetch_record(meta: dict[str, Any], result: Snapshot | FetchError) -> dict[str, Any]:
    """The page's ``fetch`` object in the manifest: its snapshot or its error, then
    the warnings and the render escalation when there are any."""
    fetch: dict[str, Any] = (
        {"error": result.to_dict()}
        if isinstance(result, FetchError)
        else {"snapshot": snap.manifest_view(result)}
    )
    if meta.get(WARNINGS):
        fetch["warnings"] = list(meta[WARNINGS])
    if RENDER_ESCALATION in meta:
        fetch["renderEscalation"] = meta[RENDER_ESCALATION]
    return fetch
