"""The revalidate middleware's decisions, called directly, reading a real store in ``tmp_path``
(``snapshots/revalidate_middleware.py``)."""

from __future__ import annotations

import pytest
import pytest_twisted

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
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.revalidate_middleware import RevalidateMiddleware
from traverse_crawl.snapshots.store import FilesystemSnapshotStore


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
    # A new attempt never inherits traverse_revalidate_sent (fetch/attempt.py); if it
    # did, a 304 to a request without validators would be taken for the prior.
    request = page_request("/p", headers=VALIDATORS, **STALE)
    assert request.meta["traverse_revalidate_sent"] == "stale"
    mw.process_response(request, reply(request, 304))
    assert request.meta["traverse_snapshot"] == "stale"  # untouched: not the prior
