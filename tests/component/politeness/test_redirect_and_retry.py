"""Component tests: the redirect and retry middlewares' decisions, called directly."""

from __future__ import annotations

import pytest
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefusedError

from tests.support.components import (
    ORIGIN,
    STALE,
    VALIDATORS,
    html,
    make_crawler,
    page_request,
    reply,
    stats,
)
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.attempt import ATTEMPT_KEYS
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.politeness.redirect_middleware import RedirectMiddleware
from traverse_crawl.politeness.retry_middleware import RetryMiddleware

# -- redirect -----------------------------------------------------------------------------


def redirect(settings=None):
    crawler = make_crawler(settings)
    return RedirectMiddleware.from_crawler(crawler), crawler


@pytest.mark.parametrize(
    ("location", "url", "slot"),
    [
        ("/q?b=2&a=1", ORIGIN + "/q?b=2&a=1", ORIGIN),
        ("q", ORIGIN + "/dir/q", ORIGIN),
        ("http://B.test:8080/x#f", "http://b.test:8080/x", "http://b.test:8080"),
    ],
)
def test_a_redirect_is_a_new_attempt_at_the_next_url(location, url, slot):
    mw, crawler = redirect()
    request = page_request("/dir/p", headers=VALIDATORS, traverse_redirects=["x"], **STALE)
    new = mw.process_response(request, reply(request, 301, Location=location))
    assert new.url == url
    assert new.dont_filter
    assert new.meta["traverse_redirects"] == ["x", request.url]
    assert new.meta["download_slot"] == slot
    assert new.meta["traverse_page_id"] == request.meta["traverse_page_id"]
    # Nothing of the previous attempt: no backoff deadline, no retry count, no validators.
    assert not (ATTEMPT_KEYS | {"retry_times"}) & set(new.meta)
    assert b"If-None-Match" not in new.headers and b"If-Modified-Since" not in new.headers
    assert stats(crawler)["redirect/count"] == 1


@pytest.mark.parametrize(
    ("status", "headers", "chain", "kind", "message"),
    [
        (302, {}, 0, "http-error", "redirect 302 with no Location header from {url}"),
        (301, {"Location": "/n"}, 5, "too-many-redirects", "exceeded 5 redirects starting at r0"),
        (307, {"Location": "http://[::1"}, 0, "invalid-url",
         'redirect to invalid URL "http://[::1" from {url}'),
        (308, {"Location": "ftp://a.test/x"}, 0, "invalid-url",
         'redirect to invalid URL "ftp://a.test/x" from {url}'),
    ],
)  # fmt: skip
def test_redirects_that_fail_the_page(status, headers, chain, kind, message):
    mw, _ = redirect({"REDIRECT_MAX_TIMES": 5})
    request = page_request(traverse_redirects=[f"r{i}" for i in range(chain)])
    with pytest.raises(PageFailed) as info:
        mw.process_response(request, reply(request, status, **headers))
    assert info.value.error.kind == kind
    assert info.value.error.message == message.format(url=request.url)


@pytest.mark.parametrize(
    ("status", "meta"),
    [(200, {}), (304, {}), (404, {}), (301, {"dont_redirect": True})],
)
def test_responses_the_redirect_middleware_leaves_alone(status, meta):
    mw, _ = redirect()
    request = page_request(**meta)
    response = reply(request, status, Location="/elsewhere")
    assert mw.process_response(request, response) is response


# -- retry --------------------------------------------------------------------------------


def retry(settings=None, draw=0.5):
    crawler = make_crawler({"RETRY_TIMES": 2, "TRAVERSE_RETRY_BACKOFF": 0.5, **(settings or {})})
    mw = RetryMiddleware.from_crawler(crawler)
    mw.random = lambda: draw  # the jitter's random source, fixed
    return mw, crawler


@pytest.mark.parametrize(
    ("status", "retried"),
    [(429, True), (500, True), (503, True), (599, True), (408, False), (404, False),
     (200, False), (304, False)],
)  # fmt: skip
def test_which_statuses_are_retried(status, retried):
    mw, _ = retry()
    request = page_request()
    response = reply(request, status)
    result = mw.process_response(request, response)
    assert (result is not response) is retried


def test_a_retry_is_a_new_attempt_of_the_same_request():
    mw, crawler = retry()
    request = page_request(headers=VALIDATORS, **STALE)  # retry_times: 1
    new = mw.process_response(request, reply(request, 503))
    assert new.url == request.url
    assert new.meta["retry_times"] == 2
    # Full jitter for retry 2: 0.5 (the draw) * 0.5 * 2**2.
    assert new.meta["traverse_backoff"] == 1.0
    assert not (ATTEMPT_KEYS - {"traverse_backoff"}) & set(new.meta)
    assert request.meta["traverse_warnings"] == [f"retry 2/2 for {request.url} after HTTP 503"]
    assert new.headers.get(b"If-None-Match") == b'"v1"'  # the same URL: revalidate decides
    assert stats(crawler)["retry/count"] == 1


@pytest.mark.parametrize(
    ("retry_after", "cap", "wait"),
    [
        ("3", 30.0, 3.0),  # honoured
        ("120", 2.0, 0.5),  # over the cap: the backoff (0.5 * 0.5 * 2**1)
        ("soon", 30.0, 0.5),  # unparsable: the backoff
    ],
)
def test_retry_after_or_the_backoff(retry_after, cap, wait):
    mw, _ = retry({"TRAVERSE_RETRY_AFTER_MAX": cap})
    request = page_request()
    new = mw.process_response(request, reply(request, 429, **{"Retry-After": retry_after}))
    assert new.meta["traverse_backoff"] == wait


def test_when_retries_run_out_the_last_response_stands():
    mw, crawler = retry()
    request = page_request(retry_times=2)
    response = reply(request, 503)
    assert mw.process_response(request, response) is response
    assert request.meta["traverse_warnings"] == []
    assert stats(crawler)["retry/max_reached"] == 1


@pytest.mark.parametrize(
    ("exception", "reason"),
    [
        (DownloadTimeoutError("took too long"), "timeout"),
        (TxConnectionRefusedError(), "network"),
        (IgnoreRequest(), None),
        (PageFailed(FetchError("robots-denied", "no")), None),
        (ValueError("a bug"), None),
    ],
)
def test_which_exceptions_are_retried(exception, reason):
    mw, _ = retry()
    request = page_request()
    new = mw.process_exception(request, exception)
    if reason is None:
        assert new is None
    else:
        assert new.meta["retry_times"] == 1
        assert request.meta["traverse_warnings"] == [f"retry 1/2 for {request.url} after {reason}"]


def test_dont_retry_is_respected():
    mw, _ = retry()
    request = page_request(dont_retry=True)
    response = html(request, status=503)
    assert mw.process_response(request, response) is response
    assert mw.process_exception(request, DownloadTimeoutError()) is None
