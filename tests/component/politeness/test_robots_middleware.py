"""Component tests: the robots, egress and revalidate middlewares' decisions, called directly.

robots.txt rules are put in the middleware's cache as a load would leave them;
egress decides on literal addresses and names that need no DNS; revalidate
reads a real store in ``tmp_path``.
"""

from __future__ import annotations

import pytest
import pytest_twisted
from scrapy.exceptions import NotConfigured
from twisted.internet import reactor

from tests.support.components import (
    ORIGIN,
    STALE,
    VALIDATORS,
    make_crawler,
    page_request,
    reply,
    run,
    stats,
)
from traverse_crawl.egress.middleware import EgressGuardMiddleware
from traverse_crawl.egress.resolver import PinnedResolver
from traverse_crawl.fetch.exceptions import PageFailed
from traverse_crawl.politeness import robots
from traverse_crawl.politeness.robots_middleware import RobotsMiddleware
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.revalidate_middleware import RevalidateMiddleware
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

UA = "traverse_crawl-bot/0.1"

# -- robots -------------------------------------------------------------------------------


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


# -- egress -------------------------------------------------------------------------------


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


# -- revalidate ---------------------------------------------------------------------------


@pytest.fixture
def revalidate_mw(tmp_path):
    url = ORIGIN + "/p"
    FilesystemSnapshotStore(str(tmp_path)).put(
        build_snapshot(
            source_id=f"seed::{url}",
            url=url,
            status=200,
            content_type="html",
            raw_body=b"<p>prior</p>",
            content_type_header="text/html",
            etag='"v7"',
            last_modified="Wed, 01 Jul 2026 00:00:00 GMT",
            fetched_at="2026-07-02T00:00:00.000Z",
        )
    )
    crawler = make_crawler({"TRAVERSE_REVALIDATE": True, "TRAVERSE_STORE": str(tmp_path)})
    return RevalidateMiddleware.from_crawler(crawler), crawler


@pytest_twisted.ensureDeferred
async def test_revalidate_sends_the_priors_validators_to_its_url_only(revalidate_mw):
    mw, crawler = revalidate_mw
    request = page_request(
        "/p#frag", headers={"If-None-Match": '"other"'}, traverse_page_id=f"seed::{ORIGIN}/p"
    )
    await run(mw.process_request(request))
    assert request.headers[b"If-None-Match"] == b'"v7"'
    assert request.headers[b"If-Modified-Since"] == b"Wed, 01 Jul 2026 00:00:00 GMT"
    assert stats(crawler)["revalidate/conditional"] == 1
    # A 304 to that hop is the prior, byte for byte, flagged.
    mw.process_response(request, reply(request, 304))
    snapshot = request.meta["traverse_snapshot"]
    assert (snapshot["body"], snapshot["fromCache"], snapshot["notModified"]) == (
        "<p>prior</p>",
        True,
        True,
    )
    assert snapshot["fetchedAt"] == "2026-07-02T00:00:00.000Z"


@pytest.mark.parametrize(
    ("path", "meta"),
    [("/other", {}), ("/p?q", {}), ("/p", {"playwright": True})],
)
@pytest_twisted.ensureDeferred
async def test_revalidate_sends_nothing_to_another_url_or_a_rendered_attempt(
    revalidate_mw, path, meta
):
    mw, _ = revalidate_mw
    request = page_request(path, traverse_page_id=f"seed::{ORIGIN}/p", **meta)
    await run(mw.process_request(request))
    assert b"If-None-Match" not in request.headers
    # Any 304 it gets is left alone: the spider records "unexpected 304".
    response = reply(request, 304)
    assert mw.process_response(request, response) is response
    assert "traverse_snapshot" not in request.meta


def test_a_stale_sent_mark_does_not_make_a_304_trusted(revalidate_mw):
    mw, _ = revalidate_mw
    # A new attempt never inherits traverse_revalidate_sent (core.attempt); if it
    # did, a 304 to a request without validators would be taken for the prior.
    request = page_request("/p", headers=VALIDATORS, **STALE)
    assert request.meta["traverse_revalidate_sent"] == "stale"
    mw.process_response(request, reply(request, 304))
    assert request.meta["traverse_snapshot"] == "stale"  # untouched: not the prior
