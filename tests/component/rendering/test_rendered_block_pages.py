"""Block pages under rendering: a rendered page is judged on the rendered document.

Real Chromium against a loopback server: a page whose script puts a challenge widget
into the DOM is a block page when rendered, and a normal page when it is not."""

from __future__ import annotations

import pytest
import pytest_twisted

from tests.support.server import Reply

pytestmark = pytest.mark.browser

# The served HTML holds no signature; the script writes one into the document.
PAGE = """<!doctype html><html><head><title>Shop</title></head>
<body><div id="root"><p>catalogue</p></div><script src="/wall.js"></script></body></html>"""
WALL = """document.getElementById("root").innerHTML = '<div id="px-captcha"></div>';"""


@pytest_twisted.ensureDeferred
@pytest.mark.parametrize(("render", "kind"), [("always", "blocked"), ("never", None)])
async def test_a_rendered_page_is_judged_on_the_rendered_document(server, crawl, render, kind):
    server.site({"/": PAGE, "/wall.js": Reply(body=WALL, content_type="application/javascript")})
    result = await crawl(
        settings={"TRAVERSE_RENDER": render, "TRAVERSE_POLICY": "web", "RETRY_TIMES": 0},
        url=server.url("/"),
    )
    fetch = result.manifest["pages"][0]["fetch"]
    assert fetch.get("error", {}).get("kind") == kind
    if kind is None:
        assert "snapshot" in fetch
    else:
        assert "px-captcha" in fetch["error"]["message"]
        assert not list((result.manifest_dir.parent / "store").rglob("*.json"))
