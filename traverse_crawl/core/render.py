"""The render policy's pure parts: meta keys, the ``renderEscalation`` record, SPEC §4's texts.

The meta keys are shared by the render middleware and the page guard
(``traverse_crawl.rendering``); declared here, neither imports the other for them.

``escalation()`` builds the object the manifest carries in ``fetch.renderEscalation``
(CONTRACT §3), with SPEC §11's outcomes. The warning texts are normative (CONTRACT §2),
including Traverse's wording ("SourceConfig.render"), so a consumer matching them on
Traverse's manifests matches ours. Imports nothing from Scrapy.
"""

from __future__ import annotations

from typing import Any, Literal

from traverse_crawl.core.errors import FetchError

# Meta keys of a rendered page request (documented in traverse_crawl.rendering.middleware).
RENDER = "traverse_render"
FALLBACK = "traverse_render_fallback"
FINAL = "traverse_render_final"
ESCALATION = "traverse_render_escalation"
# Set by the page guard (the browser side), read by the render middleware.
GUARD_KEY = "traverse_render_guard"
HANDOFF = "traverse_render_handoff"
DENIED = "traverse_render_denied"
FAILED = "traverse_render_failed"

Outcome = Literal["not-needed", "rendered", "render-failed-fallback"]

REVALIDATE_WARNING = (
    "revalidation has no effect for a rendered fetch (SourceConfig.render is true); "
    "no conditional GET is sent and no HTTP validators are captured"
)
RETRIES_WARNING = (
    "retries do not apply to a rendered fetch (SourceConfig.render is true); "
    "renderImpl failures are not retried"
)


def networkidle_warning(budget_ms: int) -> str:
    """forage's warning for a page taken before its network went idle (SPEC §18.6)."""
    return f"render: networkidle fallback used after {budget_ms}ms"


def escalation(
    policy: str,
    detected: bool,
    attempted: bool,
    outcome: Outcome,
    error: FetchError | None = None,
) -> dict[str, Any]:
    """A ``renderEscalation`` object, camelCase and in Traverse's key order."""
    value: dict[str, Any] = {
        "policy": policy,
        "shellWarningDetected": detected,
        "renderAttempted": attempted,
        "outcome": outcome,
    }
    if error is not None:
        value["renderError"] = error.to_dict()
    return value
