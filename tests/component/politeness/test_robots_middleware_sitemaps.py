"""Component tests: the robots middleware's part in sitemap discovery.

The cache is filled as a load leaves it (``fetches``, ``rules``, ``unclaimed``);
requests are built as ``traverse_crawl.sitemaps.requests`` builds them.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from scrapy import Request
from scrapy.exceptions import NotConfigured

from tests.support.components import ORIGIN, make_crawler, page_request, run
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.politeness import robots
from traverse_crawl.politeness.robots_middleware import RobotsMiddleware

UA = "traverse_crawl-bot/0.1"
BODY = b"User-agent: *\nDisallow: /private\nSitemap: /sitemap.xml\n"


def robots_mw(fetch: robots.RobotsFetch, obey: bool = True) -> RobotsMiddleware:
    crawler = make_crawler(
        {"ROBOTSTXT_OBEY": obey, "USER_AGENT": UA, "TRAVERSE_SITEMAPS": "robots"}
    )
    mw = RobotsMiddleware.from_crawler(crawler)
    mw.fetches[ORIGIN] = fetch
    if obey:
        decision = robots.decide(fetch, ORIGIN, UA)
        mw.rules[ORIGIN] = decision.rules
        if decision.warning is not None:
            mw.unclaimed[ORIGIN] = decision.warning
    return mw


def sitemap_request(path: str, kind: str = "sitemap") -> Request:
    return Request(
        ORIGIN + path,
        dont_filter=True,
        meta={"traverse_seed": 0, "traverse_sitemap": kind, "traverse_warnings": []},
    )


@pytest.mark.parametrize("obey", [True, False])
@pytest_twisted.ensureDeferred
async def test_discovery_is_answered_from_the_one_load(obey):
    mw = robots_mw(robots.RobotsFetch(status=200, body=BODY), obey)
    response = await run(mw.process_request(sitemap_request("/robots.txt", "robots")))
    assert (response.status, response.body, response.url) == (200, BODY, ORIGIN + "/robots.txt")


@pytest_twisted.ensureDeferred
async def test_discovery_of_an_unreachable_robots_txt_fails_typed():
    mw = robots_mw(robots.RobotsFetch(error_kind="timeout"))
    with pytest.raises(PageFailed) as info:
        await run(mw.process_request(sitemap_request("/robots.txt", "robots")))
    assert info.value.error.kind == "timeout"
    assert info.value.error.message == f"robots.txt for {ORIGIN} unreachable (timeout)"


@pytest_twisted.ensureDeferred
async def test_the_robots_warning_goes_to_the_first_page_never_to_a_sitemap():
    mw = robots_mw(robots.RobotsFetch(status=503))
    first_sitemap = sitemap_request("/sitemap.xml")
    await run(mw.process_request(first_sitemap))
    assert first_sitemap.meta["traverse_warnings"] == []
    first_page, later_page = page_request("/"), page_request("/a")
    await run(mw.process_request(first_page))
    await run(mw.process_request(later_page))
    assert first_page.meta["traverse_warnings"] == [
        f"robots.txt for {ORIGIN} returned 503; proceeding (fail-open)"
    ]
    assert later_page.meta["traverse_warnings"] == []


@pytest_twisted.ensureDeferred
async def test_sitemaps_are_checked_like_pages_when_obeyed():
    mw = robots_mw(robots.RobotsFetch(status=200, body=BODY))
    with pytest.raises(PageFailed) as info:
        await run(mw.process_request(sitemap_request("/private/sitemap.xml")))
    assert info.value.error.kind == "robots-denied"


@pytest_twisted.ensureDeferred
async def test_not_obeyed_robots_txt_is_read_for_sitemaps_only():
    mw = robots_mw(robots.RobotsFetch(status=200, body=BODY), obey=False)
    for request in (page_request("/private/x"), sitemap_request("/private/sitemap.xml")):
        assert await run(mw.process_request(request)) is None  # nothing is checked
    assert mw.rules == {}
    with pytest.raises(NotConfigured):  # and without sitemaps, no middleware at all
        RobotsMiddleware.from_crawler(make_crawler({"ROBOTSTXT_OBEY": False}))
