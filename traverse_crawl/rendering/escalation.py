"""The render policy's pure parts: the ``renderEscalation`` record and the render warnings.

``judge()`` decides what the response of a rendered attempt means, so each branch
is tested without a browser; ``escalation()`` builds the manifest's
``fetch.renderEscalation`` (docs/rendering.md). Imports nothing from Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from traverse_crawl.errors import ErrorKind, FetchError
from traverse_crawl.fetch.content import decode_text, resolve_content_type
from traverse_crawl.rendering import shell

Outcome = Literal["not-needed", "rendered", "render-failed-fallback"]

# Traverse's texts, its wording ("SourceConfig.render") included, so a consumer
# matching them on Traverse's manifests matches ours.
REVALIDATE_WARNING = (
    "revalidation has no effect for a rendered fetch (SourceConfig.render is true); "
    "no conditional GET is sent and no HTTP validators are captured"
)
RETRIES_WARNING = (
    "retries do not apply to a rendered fetch (SourceConfig.render is true); "
    "renderImpl failures are not retried"
)


def always_warnings(revalidate: bool, retries_set: bool) -> list[str]:
    """Traverse's render-only warnings, on every page of an ``always`` crawl."""
    warnings = [(REVALIDATE_WARNING, revalidate), (RETRIES_WARNING, retries_set)]
    return [warning for warning, applies in warnings if applies]


def networkidle_warning(budget_ms: int) -> str:
    """forage's warning for a page taken before its network went idle."""
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


@dataclass(frozen=True)
class Verdict:
    """What a rendered attempt's response means.

    ``kind``: ``rendered`` (the DOM is the page's snapshot), ``as-fetched`` (a
    document that is not HTML, captured as the server sent it) or ``failed``
    (``error``: the render failed; ``on-shell-warning`` keeps the plain page).
    """

    kind: Literal["rendered", "as-fetched", "failed"]
    error: FetchError | None = None


def judge(
    url: str,
    status: int,
    *,
    rendered: bool,
    location: str | None = None,
    escalated: bool = False,
    size: int = 0,
    maxsize: int = 0,
) -> Verdict:
    """Decide a rendered attempt's outcome from its response.

    ``rendered``: the response is the browser's DOM (scrapy-playwright's); otherwise
    it is the navigation's own response, handed back by the page guard (a redirect
    the redirect middleware did not follow, a non-2xx status, a document that is
    not HTML). ``escalated``: the attempt is an ``on-shell-warning`` escalation of
    a plain HTML page, so a document that is not HTML now means the render failed.
    ``size``: the rendered HTML's length in bytes, against ``maxsize`` (0: no limit).
    """
    if not rendered and 300 <= status < 400 and location:
        return _failed("render-error", f"render of {url} was redirected to {location}")
    if not 200 <= status < 300:
        return _failed("http-error", f"render of {url} reported HTTP {status}", status)
    if not rendered:
        if escalated:
            return _failed("render-error", f"render of {url}: the document is not HTML")
        return Verdict("as-fetched")
    if maxsize and size > maxsize:
        return _failed("too-large", f"snapshot from {url} exceeds {maxsize} bytes")
    return Verdict("rendered")


def _failed(kind: ErrorKind, message: str, status: int | None = None) -> Verdict:
    return Verdict("failed", FetchError(kind, message, status))


def shell_signals(
    status: int,
    content_type: str | None,
    body: bytes,
    *,
    hint: str | None = None,
    not_modified: bool = False,
) -> shell.ShellSignals | None:
    """The shell signals of an ``on-shell-warning`` page's plain response, when it
    is to be rendered: a 2xx HTML page that ``rendering/shell.py`` calls a JavaScript
    shell. A trustworthy 304 (``not_modified``) never renders, as in Traverse."""
    if not 200 <= status < 300 or not_modified:
        return None
    if resolve_content_type(content_type, hint) != "html":
        return None
    signals = shell.inspect(decode_text(body, content_type))
    return signals if signals.suspected else None
