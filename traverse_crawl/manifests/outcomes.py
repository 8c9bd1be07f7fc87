"""A page's ``fetch`` object for the manifest: its snapshot or its typed error.

The snapshot itself is built by the capture middleware
(``snapshots/capture_middleware.py``), for any spider's responses.
"""

from __future__ import annotations

from typing import Any

from traverse_crawl.errors import FetchError
from traverse_crawl.meta_keys import RENDER_ESCALATION, WARNINGS
from traverse_crawl.snapshots import model as snap
from traverse_crawl.snapshots.model import Snapshot


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
