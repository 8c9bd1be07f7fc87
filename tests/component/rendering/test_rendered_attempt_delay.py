"""Per-attempt request state: a new attempt never inherits the last one's.

Crawls against a real loopback server and real Chromium; timings are the
server's own timestamps.
"""

from __future__ import annotations

import pytest
import pytest_twisted

from tests.support.server import Handler, Reply

pytestmark = pytest.mark.browser

MIN_DELAY = 1.5

# A JavaScript shell: an empty mount and a script; the script adds the link.
SHELL = """<!doctype html><html><head><title>Shell</title></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div><script src="/bundle.js"></script></body></html>"""
BUNDLE = """document.getElementById("root").innerHTML =
  '<h1>Rendered</h1><a href="/flaky.html">flaky</a>';"""


@pytest_twisted.ensureDeferred
async def test_a_retried_page_escalated_to_rendering_waits_the_min_delay(server, crawl):
    server.site(
        {
            "/index.html": SHELL,
            "/bundle.js": Reply(body=BUNDLE, content_type="application/javascript"),
        }
    )
    answers = iter([Reply(503, "busy", content_type="text/plain")])

    def flaky(_: Handler) -> Reply:
        return next(answers, Reply(body=SHELL.replace("/bundle.js", "/none.js")))

    server.routes["/flaky.html"] = flaky
    result = await crawl(
        settings={"TRAVERSE_RENDER": "on-shell-warning", "TRAVERSE_MIN_DELAY": MIN_DELAY},
        url=server.url("/index.html"),
    )
    pages = {page["url"]: page for page in result.manifest["pages"]}
    flaky_page = pages[server.url("/flaky.html")]
    assert flaky_page["fetch"]["snapshot"]["rendered"] is True
    assert flaky_page["fetch"]["renderEscalation"]["outcome"] == "rendered"
    with server.lock:
        hits = [h for h in server.hits if h.path == "/flaky.html"]
    # The 503, its retry (which waits its backoff instead of the delay),
    # then the rendered attempt: a new request to the origin, which waits the delay.
    assert len(hits) == 3
    assert hits[2].start - hits[1].end >= MIN_DELAY - 0.05
