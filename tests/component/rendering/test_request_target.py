"""Rendered pages record, and request, the URL Scrapy asked for.

Chromium has its own URL serialiser (it percent-encodes ``|`` in a path, for
one); the snapshot's ``url`` and the links resolved against it must still be
the WHATWG URL of the page.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_twisted

from tests.component.fetch.test_request_target import SETTINGS, check_tricky, recorded
from tests.support.server import Server
from tests.support.tricky import PAGE, leaf, tricky_site

pytestmark = pytest.mark.browser


@pytest_twisted.ensureDeferred
async def test_a_rendered_page_is_recorded_at_the_url_requested(server: Server, crawl: Any) -> None:
    o = server.origin
    server.site({"/r/p|q/index": '<a href="next?">next</a> <a href="a|b">a|b</a>'})
    server.fallback = leaf()
    result = await crawl(
        settings={"TRAVERSE_RENDER": "always", "TRAVERSE_MAX_DEPTH": 1},
        url=o + "/r/p|q/index?",
    )
    pages = result.manifest["pages"]
    assert [p["url"] for p in pages] == [o + "/r/p|q/index?", o + "/r/p|q/next?", o + "/r/p|q/a|b"]
    for page in pages:
        assert page["fetch"]["snapshot"]["rendered"] is True
        assert recorded(page) == (page["url"], page["url"], [])
    # The navigations went out with the exact targets, as for plain pages.
    assert sorted(h.target for h in server.hits) == sorted(
        ["/robots.txt", "/r/p|q/index?", "/r/p|q/next?", "/r/p|q/a|b"]
    )


@pytest_twisted.ensureDeferred
async def test_every_tricky_link_rendered_is_requested_as_its_whatwg_url(
    server: Server, crawl: Any
) -> None:
    tricky_site(server)
    settings = {**SETTINGS, "TRAVERSE_RENDER": "always"}
    check_tricky(server, await crawl(settings=settings, url=server.url(PAGE)))
