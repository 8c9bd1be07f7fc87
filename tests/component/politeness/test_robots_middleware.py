"""The robots middleware's decisions, called directly (``politeness/robots_middleware.py``).

robots.txt rules are put in the middleware's cache as a load would leave them.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured

from tests.support.components import ORIGIN, make_crawler, page_request, run, stats
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.politeness import robots
from traverse_crawl.politeness.robots_middleware import RobotsMiddleware

UA = "traverse_crawl-bot/0.1"


def robots_mw(body: str, matcher: str, min_delay: float = 1.0, cap: float = 10.0):
    crawler = make_crawler(
        {
            "ROBOTSTXT_OBEY": True,
            "USER_AGENT": UA,
            "TRAVERSE_ROBOTS_MATCHER": matcher,
            "TRAVERSE_MIN_DELAY": min_delay,
            "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": cap,
        }
    )
    mw = RobotsMiddleware.from_crawler(crawler)
    # What a load of this robots.txt leaves behind (RobotsMiddleware._load).
    fetch = robots.RobotsFetch(status=200, body=body.encode())
    mw.fetches[ORIGIN] = fetch
    mw.rules[ORIGIN] = robots.decide(fetch, ORIGIN, UA, "fail-open", matcher).rules
    return mw, crawler


DISALLOW = "User-agent: *\nDisallow: /private\nDisallow: /*.pdf$\n"


@pytest.mark.parametrize(
    ("matcher", "body", "path", "expected"),
    [
        ("traverse", DISALLOW, "/private/x", "denied"),
        ("traverse", DISALLOW, "/public", None),
        ("rfc9309", DISALLOW, "/c.pdf", "denied"),
        ("traverse", DISALLOW, "/c.pdf", None),  # Traverse's matcher has no wildcards
        ("rfc9309", "User-agent: *\nCrawl-delay: 5\n", "/", 5.0),
        ("rfc9309", "User-agent: *\nCrawl-delay: 60\n", "/", 10.0),  # capped
        ("rfc9309", "User-agent: *\nCrawl-delay: 0.5\n", "/", None),  # below the minimum
        ("traverse", "User-agent: *\nCrawl-delay: 5\n", "/", None),  # not Traverse's rule
        ("rfc9309", "User-agent: other\nDisallow: /\n", "/", None),  # another group
    ],
)
@pytest_twisted.ensureDeferred
async def test_robots_decision(matcher, body, path, expected):
    mw, crawler = robots_mw(body, matcher)
    # A hop's meta can carry a previous origin's Crawl-delay: it never applies here.
    request = page_request(path, traverse_origin_delay=30.0)
    if expected == "denied":
        with pytest.raises(PageFailed) as info:
            await run(mw.process_request(request))
        assert info.value.error.kind == "robots-denied"
        assert (
            info.value.error.message
            == f"robots.txt disallows {UA.split('/')[0]} from {request.url}"
        )
        assert stats(crawler)["robots/denied"] == 1
        return
    await run(mw.process_request(request))
    assert request.meta.get("traverse_origin_delay") == expected


@pytest.mark.parametrize("settings", [{"ROBOTSTXT_OBEY": False}, {"TRAVERSE_MODE": "replay"}])
def test_robots_is_off_when_not_obeyed_or_replaying(settings):
    with pytest.raises(NotConfigured):
        RobotsMiddleware.from_crawler(make_crawler({"ROBOTSTXT_OBEY": True, **settings}))
