"""Revalidation reads the validators of a store in a bucket, and a 304 rewrites its object."""

from __future__ import annotations

import json

import pytest
import pytest_twisted

from tests.component.snapshots.test_revalidation import REVALIDATE, Resource
from tests.support.s3server import S3Server

pytestmark = pytest.mark.s3


@pytest_twisted.ensureDeferred
async def test_a_304_from_a_bucket_store_is_the_prior_snapshot(server, crawl, s3_server: S3Server):
    resource = Resource("<p>hello</p>", etag='"v1"')
    server.routes["/page.html"] = resource
    bucket = s3_server.new_bucket()
    settings = {**REVALIDATE, **s3_server.settings(), "TRAVERSE_STORE": f"s3://{bucket}/st"}
    url = server.url("/page.html")
    first = await crawl(settings=settings, url=url, source_id="s")
    prior = first.manifest["pages"][0]["fetch"]["snapshot"]
    (key,) = s3_server.objects(bucket, "st/")

    second = await crawl(settings=settings, url=url, source_id="s")
    assert resource.seen == [{}, {"If-None-Match": '"v1"'}]
    page = second.manifest["pages"][0]
    assert page["fetch"] == {"snapshot": {**prior, "fromCache": True, "notModified": True}}
    assert second.stats["revalidate/not_modified"] == 1
    stored = s3_server.objects(bucket, "st/")
    assert list(stored) == [key]  # the same object, rewritten with the flags
    rewritten = json.loads(stored[key])
    assert rewritten["notModified"] is True and rewritten["body"] == "<p>hello</p>"
