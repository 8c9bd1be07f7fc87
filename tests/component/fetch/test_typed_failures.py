"""Every failed request's exception carries its FetchError, for any spider."""

from __future__ import annotations

import gzip

import pytest
from scrapy import Request
from scrapy.exceptions import DownloadTimeoutError, IgnoreRequest
from scrapy.http import Response
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet.error import ConnectionRefusedError as TxConnectionRefusedError

from tests.support.components import make_crawler
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.compression_middleware import HttpCompressionMiddleware
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.fetch.failure_middleware import TypedFailureMiddleware
from traverse_crawl.fetch.http_error_middleware import HttpErrorMiddleware


def typed(exception: Exception, **meta: object) -> Exception:
    mw = TypedFailureMiddleware.from_crawler(make_crawler({"DOWNLOAD_TIMEOUT": 7}))
    assert mw.process_exception(Request("http://a.test/p", meta=meta), exception) is None
    return exception


@pytest.mark.parametrize(
    ("exception", "meta", "error"),
    [
        (
            DownloadTimeoutError("took too long"),
            {},
            FetchError("timeout", "request to http://a.test/p timed out after 7000ms"),
        ),
        (
            DownloadTimeoutError("took too long"),
            {"download_timeout": 0.25},
            FetchError("timeout", "request to http://a.test/p timed out after 250ms"),
        ),
        (
            TxConnectionRefusedError("nope"),
            {},
            FetchError("network", "request to http://a.test/p failed: the connection was refused"),
        ),
    ],
)
def test_a_download_failure_keeps_its_class_and_carries_its_error(exception, meta, error):
    assert typed(exception, **meta).error == error  # type: ignore[attr-defined]


def test_a_page_failure_keeps_its_own_error():
    error = FetchError("egress-denied", "refused")
    assert typed(PageFailed(error)).error is error  # type: ignore[attr-defined]


def test_a_request_another_component_dropped_is_left_alone():
    assert not hasattr(typed(IgnoreRequest("offsite")), "error")


def test_a_filtered_status_is_scrapys_HttpError_with_the_typed_error():
    crawler = make_crawler()
    mw = HttpErrorMiddleware.from_crawler(crawler)
    request = Request("http://a.test/gone")
    with pytest.raises(HttpError) as raised:
        mw.process_spider_input(Response(request.url, status=410, request=request))
    assert raised.value.error == FetchError(  # type: ignore[attr-defined]
        "http-error", "HTTP 410 from http://a.test/gone", 410
    )
    # A status the spider handles passes, as with Scrapy's own middleware.
    allowed = Request("http://a.test/gone", meta={"handle_httpstatus_list": [410]})
    assert mw.process_spider_input(Response(allowed.url, status=410, request=allowed)) is None


def test_a_decompression_bomb_is_too_large():
    crawler = make_crawler({"DOWNLOAD_MAXSIZE": 1000})
    mw = HttpCompressionMiddleware.from_crawler(crawler)
    request = Request("http://a.test/bomb")
    body = gzip.compress(b"0" * 100_000)
    response = Response(request.url, body=body, headers={"Content-Encoding": "gzip"})
    with pytest.raises(PageFailed) as raised:
        mw.process_response(request, response)
    assert raised.value.error == FetchError(
        "too-large", "response from http://a.test/bomb exceeds 1000 bytes"
    )
    plain = Response(
        request.url, body=gzip.compress(b"small"), headers={"Content-Encoding": "gzip"}
    )
    assert mw.process_response(request, plain).body == b"small"
