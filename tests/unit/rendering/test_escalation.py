"""Pure table: what a rendered attempt's response means, without a browser."""

from __future__ import annotations

import pytest

from traverse_crawl.errors import FetchError
from traverse_crawl.rendering.escalation import (
    RETRIES_WARNING,
    REVALIDATE_WARNING,
    Verdict,
    always_warnings,
    escalation,
    judge,
    shell_signals,
)

URL = "https://a.test/app"
SHELL = (
    "<!doctype html><html><head><title>App</title></head><body>"
    '<div id="root"></div><script src="/bundle.js"></script></body></html>'
)


def failed(kind, message, status=None):
    return Verdict("failed", FetchError(kind, message.format(url=URL), status))


DOM = {"rendered": True}
HANDED_BACK = {"rendered": False}


@pytest.mark.parametrize(
    ("status", "kwargs", "expected"),
    [
        # The browser's DOM.
        (200, {**DOM, "size": 10, "maxsize": 100}, Verdict("rendered")),
        (200, {**DOM, "size": 10, "maxsize": 0}, Verdict("rendered")),
        (200, {**DOM, "size": 101, "maxsize": 100},
         failed("too-large", "snapshot from {url} exceeds 100 bytes")),
        (500, DOM, failed("http-error", "render of {url} reported HTTP 500", 500)),
        # The navigation's own response, handed back by the page guard.
        (302, {**HANDED_BACK, "location": "/login"},
         failed("render-error", "render of {url} was redirected to /login")),
        (302, HANDED_BACK, failed("http-error", "render of {url} reported HTTP 302", 302)),
        (404, {**HANDED_BACK, "location": "/x"},
         failed("http-error", "render of {url} reported HTTP 404", 404)),
        (200, HANDED_BACK, Verdict("as-fetched")),  # a PDF under "always"
        (204, HANDED_BACK, Verdict("as-fetched")),
        (200, {**HANDED_BACK, "escalated": True},
         failed("render-error", "render of {url}: the document is not HTML")),
    ],
)  # fmt: skip
def test_judge(status, kwargs, expected):
    assert judge(URL, status, **kwargs) == expected


def test_escalation_record_in_traverses_key_order():
    error = FetchError("render-error", "boom")
    record = escalation("on-shell-warning", True, True, "render-failed-fallback", error)
    assert list(record) == [
        "policy",
        "shellWarningDetected",
        "renderAttempted",
        "outcome",
        "renderError",
    ]
    assert record["renderError"] == {"kind": "render-error", "message": "boom"}
    assert "renderError" not in escalation("always", False, True, "rendered")


@pytest.mark.parametrize(
    ("revalidate", "retries_set", "expected"),
    [
        (False, False, []),
        (True, False, [REVALIDATE_WARNING]),
        (False, True, [RETRIES_WARNING]),
        (True, True, [REVALIDATE_WARNING, RETRIES_WARNING]),
    ],
)
def test_always_warnings(revalidate, retries_set, expected):
    assert always_warnings(revalidate, retries_set) == expected


@pytest.mark.parametrize(
    ("status", "content_type", "body", "kwargs", "escalates"),
    [
        (200, "text/html", SHELL, {}, True),
        (200, None, SHELL, {"hint": "html"}, True),
        (200, "text/html", "<p>" + "Plenty of server-rendered text. " * 30 + "</p>", {}, False),
        (404, "text/html", SHELL, {}, False),
        (200, "application/pdf", SHELL, {}, False),
        (200, "text/html", SHELL, {"not_modified": True}, False),  # a trusted 304
    ],
)
def test_which_plain_pages_are_escalated(status, content_type, body, kwargs, escalates):
    signals = shell_signals(status, content_type, body.encode(), **kwargs)
    assert (signals is not None) is escalates
