"""Rendering that needs no browser: a crawl that never renders starts none, and a missing
browser or a bad ``TRAVERSE_RENDER_WAIT_FOR`` stops an in-process crawl before any request."""

from __future__ import annotations

import pytest
import pytest_twisted

from traverse_crawl.errors import ConfigError


@pytest_twisted.ensureDeferred
async def test_never_starts_no_browser_and_records_no_escalation(server, crawl):
    server.site({"/a.html": '<a href="b.html">b</a>', "/b.html": "<p>b</p>"})
    result = await crawl(url=server.url("/a.html"))
    pages = result.manifest["pages"]
    assert len(pages) == 2
    assert all("renderEscalation" not in p["fetch"] for p in pages)
    assert all("rendered" not in p["fetch"]["snapshot"] for p in pages)
    assert not [key for key in result.stats if key.startswith(("playwright/", "render/"))]


@pytest_twisted.ensureDeferred
async def test_missing_browser_stops_an_in_process_crawl_before_any_request(server, crawl):
    server.site({"/a.html": "<p>a</p>"})
    with pytest.raises(ConfigError, match="/nonexistent/chrome"):
        await crawl(
            settings={
                "TRAVERSE_RENDER": "on-shell-warning",
                "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": "/nonexistent/chrome"},
            },
            url=server.url("/a.html"),
        )
    assert server.paths() == []


@pytest_twisted.ensureDeferred
async def test_invalid_wait_for_selector_is_a_start_up_error(server, crawl):
    server.site({"/a.html": "<p>a</p>"})
    with pytest.raises(ConfigError, match="TRAVERSE_RENDER_WAIT_FOR"):
        await crawl(
            settings={"TRAVERSE_RENDER": "always", "TRAVERSE_RENDER_WAIT_FOR": "div[[oops"},
            url=server.url("/a.html"),
        )
    assert server.paths() == []
