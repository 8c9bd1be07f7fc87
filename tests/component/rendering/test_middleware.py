"""Component tests: the render middleware's decisions, called directly (no browser).

The middleware marks rendered attempts, escalates a plain shell page to one
rendered attempt, and turns what comes back into the page's outcome; Chromium
only appears in tests/component/rendering/test_rendered_crawls.py.
"""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import load_object

from tests.support.components import (
    ORIGIN,
    STALE,
    VALIDATORS,
    html,
    make_crawler,
    page_request,
    reply,
)
from traverse_crawl.fetch.attempt import ATTEMPT_KEYS
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.meta_keys import RENDER_FINAL
from traverse_crawl.rendering.escalation import REVALIDATE_WARNING
from traverse_crawl.rendering.middleware import RenderMiddleware
from traverse_crawl.rendering.pageguard import GUARDS

SHELL = (
    "<!doctype html><html><head><title>App</title></head><body>"
    '<div id="root"></div><script src="/bundle.js"></script></body></html>'
)
MIDDLEWARE = "traverse_crawl.rendering.middleware.RenderMiddleware"
NORMAL = "<p>" + "An ordinary server-rendered page with plenty of text. " * 20 + "</p>"


@pytest.fixture
def render():
    made = []

    def build(policy: str, **settings):
        crawler = make_crawler({"TRAVERSE_RENDER": policy, **settings})
        mw = RenderMiddleware.from_crawler(crawler)
        made.append(mw)
        return mw, crawler

    yield build
    for mw in made:
        mw.engine_stopped()
    assert not GUARDS


@pytest.mark.parametrize("settings", [{"TRAVERSE_RENDER": "never"}, {"TRAVERSE_MODE": "replay"}])
def test_off_when_never_or_replaying(settings):
    with pytest.raises(NotConfigured):
        RenderMiddleware.from_crawler(make_crawler({"TRAVERSE_RENDER": "always", **settings}))


def test_always_marks_every_page_request_for_the_browser(render):
    mw, crawler = render("always", TRAVERSE_REVALIDATE=True)
    request = page_request()
    mw.process_request(request)
    meta = request.meta
    assert meta["traverse_render"] is True
    assert meta["playwright"] is True and meta["playwright_context"] == "traverse"
    assert meta["dont_retry"] is True  # as in Traverse, the renderer is never retried
    assert meta["traverse_render_guard"] in GUARDS
    assert meta["playwright_page_goto_kwargs"]["wait_until"] == "commit"
    assert meta["traverse_warnings"] == [REVALIDATE_WARNING]
    assert crawler.stats.get_value("render/attempts") == 1


def test_robots_requests_are_never_rendered(render):
    mw, _ = render("always")
    request = Request(ORIGIN + "/robots.txt", meta={"traverse_robots": True})
    mw.process_request(request)
    assert "playwright" not in request.meta


def test_on_shell_warning_sends_the_plain_attempt_first(render):
    mw, _ = render("on-shell-warning")
    request = page_request()
    mw.process_request(request)
    assert "playwright" not in request.meta
    assert request.meta["traverse_render_escalation"]["outcome"] == "not-needed"


def test_a_shell_is_escalated_to_one_rendered_attempt_that_starts_afresh(render):
    mw, crawler = render("on-shell-warning")
    # What a retried plain attempt leaves (its outcome is not settled: no FINAL).
    left = {key: value for key, value in STALE.items() if key != RENDER_FINAL}
    request = page_request(headers=VALIDATORS, traverse_warnings=["w"], **left)
    new = mw.process_response(request, html(request, SHELL))
    assert isinstance(new, Request)
    assert new.url == request.url and new.dont_filter
    assert new.meta["traverse_render"] is True
    assert new.meta["dont_redirect"] is True
    assert new.meta["traverse_render_fallback"]["body"] == SHELL.encode()
    assert new.meta["traverse_warnings"] == ["w"]
    assert "traverse_render_escalation" not in new.meta
    # A new attempt (fetch/attempt.py): no backoff deadline, retry count or validators of
    # the plain one. A stale traverse_not_before let it skip TRAVERSE_MIN_DELAY.
    assert not (ATTEMPT_KEYS | {"retry_times"}) & set(new.meta)
    assert b"If-None-Match" not in new.headers and b"If-Modified-Since" not in new.headers
    assert crawler.stats.get_value("render/shell_detected") == 1


@pytest.mark.parametrize(
    ("body", "status", "content_type", "meta"),
    [
        (NORMAL, 200, "text/html", {}),  # not a shell
        (SHELL, 404, "text/html", {}),  # not 2xx
        (SHELL, 200, "text/plain", {}),  # not HTML
        (SHELL, 200, "text/html", {"traverse_snapshot": {"notModified": True}}),  # trusted 304
        (SHELL, 200, "text/html", {"traverse_render_final": True}),  # settled
    ],
)
def test_what_is_not_escalated(render, body, status, content_type, meta):
    mw, _ = render("on-shell-warning")
    request = page_request(**meta)
    response = html(request, body, status, **{"Content-Type": content_type})
    assert mw.process_response(request, response) is response


def rendered_attempt(mw, **meta):
    request = page_request(traverse_render=True, **meta)
    mw.process_request(request)
    return request


def test_a_handed_back_redirect_fails_the_render_and_keeps_the_plain_page(render):
    mw, crawler = render("on-shell-warning")
    plain_request = page_request(traverse_warnings=["plain warning"])
    escalated = mw.process_response(plain_request, html(plain_request, SHELL))
    mw.process_request(escalated)
    escalated.meta["traverse_warnings"].append("render warning")
    kept = mw.process_response(escalated, reply(escalated, 302, Location="/login"))
    assert kept.status == 200 and kept.body == SHELL.encode()
    assert escalated.meta["traverse_warnings"] == ["plain warning"]
    assert escalated.meta["traverse_render_escalation"] == {
        "policy": "on-shell-warning",
        "shellWarningDetected": True,
        "renderAttempted": True,
        "outcome": "render-failed-fallback",
        "renderError": {
            "kind": "render-error",
            "message": f"render of {escalated.url} was redirected to /login",
        },
    }
    assert crawler.stats.get_value("render/fallback") == 1


def test_under_always_a_failed_render_fails_the_page(render):
    mw, _ = render("always")
    request = rendered_attempt(mw)
    with pytest.raises(PageFailed) as info:
        mw.process_response(request, reply(request, 503))
    assert info.value.error.to_dict() == {
        "kind": "http-error",
        "message": f"render of {request.url} reported HTTP 503",
        "status": 503,
    }
    assert "traverse_render_escalation" not in request.meta  # as in Traverse


def test_under_always_a_document_that_is_not_html_is_captured_as_fetched(render):
    mw, crawler = render("always")
    request = rendered_attempt(mw)
    response = reply(request, 200, **{"Content-Type": "application/pdf"})
    assert mw.process_response(request, response) is response
    assert request.meta["traverse_render_escalation"]["outcome"] == "not-needed"
    assert crawler.stats.get_value("render/not_html") == 1


def test_a_rendered_dom_becomes_utf8_html_without_validators(render):
    mw, _ = render("always")
    request = rendered_attempt(mw)
    dom = html(request, "<p>café</p>", ETag='"v1"', **{"Last-Modified": "x"})
    dom.flags.append("playwright")
    out = mw.process_response(request, dom)
    assert out.headers[b"Content-Type"] == b"text/html; charset=utf-8"
    assert b"ETag" not in out.headers and b"Last-Modified" not in out.headers
    assert out.body == "<p>café</p>".encode()
    assert request.meta["traverse_render_escalation"]["outcome"] == "rendered"


def test_a_rendered_dom_over_the_size_limit_is_too_large(render):
    mw, _ = render("always", DOWNLOAD_MAXSIZE=10)
    request = rendered_attempt(mw)
    dom = html(request, "<p>" + "x" * 20 + "</p>")
    dom.flags.append("playwright")
    with pytest.raises(PageFailed) as info:
        mw.process_response(request, dom)
    assert info.value.error.kind == "too-large"


@pytest.mark.parametrize(
    ("settings", "installed"),
    [
        ({"TRAVERSE_RENDER": "never"}, None),
        ({"TRAVERSE_RENDER": "always", "TRAVERSE_MODE": "replay"}, None),
        ({"TRAVERSE_RENDER": "on-shell-warning"}, 540),
        # The user's own entry wins, None included (the middleware stays out).
        ({"TRAVERSE_RENDER": "always", "DOWNLOADER_MIDDLEWARES": {MIDDLEWARE: None}}, None),
        ({"TRAVERSE_RENDER": "always", "DOWNLOADER_MIDDLEWARES": {MIDDLEWARE: 545}}, 545),
    ],
)
def test_the_addon_installs_the_middleware_only_when_pages_are_rendered(settings, installed):
    crawler = make_crawler({"ADDONS": {"traverse_crawl.Addon": 100}, **settings})
    entries = {
        load_object(key) if isinstance(key, str) else key: value
        for key, value in crawler.settings.getdict("DOWNLOADER_MIDDLEWARES").items()
    }
    assert entries.get(RenderMiddleware) == installed
