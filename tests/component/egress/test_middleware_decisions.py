"""The egress guard middleware's decisions, called directly: literal addresses and names that
need no DNS (``egress/middleware.py``)."""

from __future__ import annotations

import pytest
import pytest_twisted
from twisted.internet import reactor

from tests.support.components import make_crawler, page_request, run, stats
from traverse_crawl.egress.middleware import EgressGuardMiddleware
from traverse_crawl.egress.resolver import PinnedResolver
from traverse_crawl.fetch.exceptions import PageFailed


@pytest.fixture
def egress_mw():
    previous = reactor.installNameResolver(PinnedResolver(reactor).underlying)
    try:
        crawler = make_crawler({"TRAVERSE_EGRESS_ALLOW": ["http://127.0.0.1:9"]})
        yield EgressGuardMiddleware.from_crawler(crawler), crawler
    finally:
        reactor.installNameResolver(previous)


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8080/",
        "http://127.0.0.1:8000/",  # loopback, but not the allowed origin
        "http://localhost/",
        "http://0x7f.1/",
    ],
)
@pytest_twisted.ensureDeferred
async def test_egress_refuses_non_public_hosts_before_anything_is_sent(egress_mw, url):
    mw, crawler = egress_mw
    request = page_request()
    request = request.replace(url=url)
    with pytest.raises(PageFailed) as info:
        await run(mw.process_request(request))
    assert info.value.error.kind == "egress-denied"
    assert stats(crawler)["egress/denied"] == 1


@pytest_twisted.ensureDeferred
async def test_egress_lets_an_allowed_origin_through_and_pins_it(egress_mw):
    mw, crawler = egress_mw
    request = page_request().replace(url="http://127.0.0.1:9/page")
    assert await run(mw.process_request(request)) is None
    assert stats(crawler)["egress/allowed_by_setting"] == 1
    assert "egress/denied" not in stats(crawler)
