"""A page's ``fetch`` object (CONTRACT §3): its snapshot or its typed error.

The snapshot itself is built by the capture middleware
(``snapshots/capture_middleware.py``), for any spider's responses.
"""

from __future__ import annotations

from typing import Any

from traverse_crawl.errors import FetchError
from traverse_crawl.snapshots import model as snap


def fetch_record(meta: dict[str, Any], result: dict[str, Any] | FetchError) -> dict[str, Any]:
    """The page's ``fetch`` object (CONTRACT §3): its snapshot or its error, then
    the warnings and the render escalation when there are any."""
    fetch: dict[str, Any] = (
        {"error": result.to_dict()}
        if isinstance(result, FetchError)
        else {"snapshot": snap.manifest_view(result)}
    )
    if meta.get("traverse_warnings"):
        fetch["warnings"] = list(meta["traverse_warnings"])
    if "traverse_render_escalation" in meta:
        fetch["renderEscalation"] = meta["traverse_render_escalation"]
    return fetch
