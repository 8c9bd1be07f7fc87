"""The page id of a request that is not a frontier page."""

from __future__ import annotations

import pytest

from traverse_crawl.snapshots.capture import request_page_id


@pytest.mark.parametrize(
    ("source", "url", "page_id"),
    [
        ("shop", "http://a.test/p?b=2&a=1#top", "shop::http://a.test/p?b=2&a=1"),
        ("my shop/2", "https://a.test/", "my%20shop%2F2::https://a.test/"),
        ("shop", "http://A.test:80/x/../y", "shop::http://a.test/y"),  # as a WHATWG href
        ("shop", "http://a.test/x?", "shop::http://a.test/x?"),  # the empty query kept
        ("é!", "http://a.test/", "%C3%A9!::http://a.test/"),
    ],
)
def test_a_page_id_is_the_encoded_source_and_the_url_without_its_fragment(source, url, page_id):
    assert request_page_id(source, url) == page_id


@pytest.mark.parametrize("url", ["data:text/plain,hi", "file:///etc/hosts", "not a url"])
def test_a_url_that_is_not_http_has_no_page_id(url):
    assert request_page_id("shop", url) is None


def test_a_source_that_encodeURIComponent_refuses_has_no_page_id():
    assert request_page_id("\ud800", "http://a.test/") is None
