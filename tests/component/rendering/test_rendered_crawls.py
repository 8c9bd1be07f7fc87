"""Rendering with Debian's Chromium through scrapy-playwright (docs/rendering.md).

Every test here drives the real browser (``/usr/bin/chromium``, installed by
``.ci/run``) against real HTTP servers on 127.0.0.1; none is skipped.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import pytest
import pytest_twisted

from tests.support.server import Reply, Server, serve

pytestmark = pytest.mark.browser

ROBOTS = Reply(body="User-agent: *\nDisallow: /private", content_type="text/plain")
LONG_TEXT = "This page is ordinary server-rendered HTML with plenty of visible text. " * 12


@pytest.fixture
def refused() -> Iterator[Server]:
    """A loopback server that is NOT in TRAVERSE_EGRESS_ALLOW: it must never be hit."""
    yield from serve()


def by_url(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {page["url"]: page for page in manifest["pages"]}


def document_hits(server: Server) -> list[str]:
    return [path for path in server.paths() if path != "/robots.txt"]


# -- always ---------------------------------------------------------------------------

JS_LINKS = """<html><head><title>app</title></head><body><div id="app"></div>
<script>
fetch("/links.json").then(r => r.json()).then(links => {
  const app = document.getElementById("app");
  for (const href of links) {
    const a = document.createElement("a"); a.href = href; a.textContent = href;
    app.appendChild(a);
  }
});
</script></body></html>"""


@pytest_twisted.ensureDeferred
async def test_always_follows_links_that_exist_only_after_javascript(server, crawl):
    server.site(
        {
            "/app.html": JS_LINKS,
            "/links.json": Reply(body='["one.html", "two.html"]', content_type="application/json"),
            "/one.html": "<p>one</p>",
            "/two.html": "<p>two</p>",
        }
    )
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/app.html"))
    pages = result.manifest["pages"]
    assert [(p["url"], p["depth"]) for p in pages] == [
        (server.url("/app.html"), 0),
        (server.url("/one.html"), 1),
        (server.url("/two.html"), 1),
    ]
    for page in pages:
        snapshot = page["fetch"]["snapshot"]
        assert snapshot["contentType"] == "html"
        assert snapshot["rendered"] is True
        assert "etag" not in snapshot and "lastModified" not in snapshot
        assert page["fetch"]["renderEscalation"] == {
            "policy": "always",
            "shellWarningDetected": False,
            "renderAttempted": True,
            "outcome": "rendered",
        }
    # The links came from the DOM after the script ran: the plain HTML has none.
    assert "one.html" not in JS_LINKS
    assert server.count("/links.json") == 1
    assert result.stats["render/rendered"] == 3


@pytest_twisted.ensureDeferred
async def test_rendered_snapshot_is_the_dom_as_utf8(server, crawl, tmp_path):
    # Served as Latin-1; the script adds a character Latin-1 cannot encode.
    page = (
        '<html><head><meta charset="iso-8859-1"></head><body><p id="x">caf\xe9</p>'
        '<script>document.getElementById("x").textContent += " \\u2713 ok";</script>'
        "</body></html>"
    )
    server.site({"/p.html": Reply(body=page.encode("latin-1"), content_type="text/html")})
    await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/p.html"))
    (stored,) = (tmp_path / "store").rglob("*.json")
    snapshot = json.loads(stored.read_text(encoding="utf-8"))
    assert snapshot["rendered"] is True
    assert '<p id="x">café \u2713 ok</p>' in snapshot["body"]


@pytest_twisted.ensureDeferred
async def test_always_warns_that_revalidation_and_retries_do_not_apply(server, crawl):
    server.site({"/a.html": Reply(body="<p>a</p>", headers={"ETag": '"v1"'})})
    await crawl(url=server.url("/a.html"))  # a plain capture: the store has the ETag
    result = await crawl(
        settings={"TRAVERSE_RENDER": "always", "TRAVERSE_REVALIDATE": True, "RETRY_TIMES": 3},
        url=server.url("/a.html"),
    )
    (page,) = result.manifest["pages"]
    assert page["fetch"]["warnings"] == [
        "revalidation has no effect for a rendered fetch (SourceConfig.render is true); "
        "no conditional GET is sent and no HTTP validators are captured",
        "retries do not apply to a rendered fetch (SourceConfig.render is true); "
        "renderImpl failures are not retried",
    ]
    snapshot = page["fetch"]["snapshot"]
    assert snapshot["rendered"] is True
    assert "notModified" not in snapshot and "etag" not in snapshot
    with server.lock:
        rendered_hit = [h for h in server.hits if h.path == "/a.html"][-1]
    assert "if-none-match" not in {name.lower() for name in rendered_hit.headers}


# -- on-shell-warning -------------------------------------------------------------------

SHELL = """<!doctype html><html><head><title>Shell</title></head>
<body><noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div><script src="/bundle.js"></script></body></html>"""
BUNDLE = """document.getElementById("root").innerHTML =
  '<h1>Rendered</h1><a href="/deep.html">deep</a>';"""


def shell_site(server: Server) -> None:
    server.site(
        {
            "/index.html": f'<p>{LONG_TEXT}</p><a href="shell.html">s</a><a href="plain.html">',
            "/shell.html": SHELL,
            "/bundle.js": Reply(body=BUNDLE, content_type="application/javascript"),
            "/plain.html": "<p>A short page, but no script and no empty mount.</p>",
            "/deep.html": "<p>deep</p>",
        }
    )


@pytest_twisted.ensureDeferred
async def test_on_shell_warning_renders_the_shell_and_not_a_normal_page(server, crawl):
    shell_site(server)
    result = await crawl(
        settings={"TRAVERSE_RENDER": "on-shell-warning"}, url=server.url("/index.html")
    )
    pages = by_url(result.manifest)
    assert list(pages) == [
        server.url("/index.html"),
        server.url("/shell.html"),
        server.url("/plain.html"),
        server.url("/deep.html"),
    ]
    not_needed = {
        "policy": "on-shell-warning",
        "shellWarningDetected": False,
        "renderAttempted": False,
        "outcome": "not-needed",
    }
    for path in ("/index.html", "/plain.html", "/deep.html"):
        page = pages[server.url(path)]
        assert "rendered" not in page["fetch"]["snapshot"], path
        assert page["fetch"]["renderEscalation"] == not_needed, path
    shell = pages[server.url("/shell.html")]
    assert shell["fetch"]["snapshot"]["rendered"] is True
    assert shell["fetch"]["renderEscalation"] == {
        "policy": "on-shell-warning",
        "shellWarningDetected": True,
        "renderAttempted": True,
        "outcome": "rendered",
    }
    # One plain fetch each; the shell once more, by the browser, with its script.
    assert server.count("/index.html") == 1
    assert server.count("/plain.html") == 1
    assert server.count("/shell.html") == 2
    assert server.count("/bundle.js") == 1
    assert result.stats["render/shell_detected"] == 1
    assert result.stats["render/attempts"] == 1


@pytest_twisted.ensureDeferred
async def test_on_shell_warning_keeps_the_plain_page_when_the_render_fails(server, crawl):
    shell_site(server)
    result = await crawl(
        settings={
            "TRAVERSE_RENDER": "on-shell-warning",
            "TRAVERSE_RENDER_WAIT_FOR": "#never-there",
            "DOWNLOAD_TIMEOUT": 2,
        },
        url=server.url("/shell.html"),
    )
    (page,) = result.manifest["pages"]
    snapshot = page["fetch"]["snapshot"]
    assert "rendered" not in snapshot
    escalation = page["fetch"]["renderEscalation"]
    assert {k: v for k, v in escalation.items() if k != "renderError"} == {
        "policy": "on-shell-warning",
        "shellWarningDetected": True,
        "renderAttempted": True,
        "outcome": "render-failed-fallback",
    }
    assert escalation["renderError"]["kind"] == "render-error"
    assert "'#never-there' did not appear within 2000ms" in escalation["renderError"]["message"]
    assert server.count("/deep.html") == 0  # the plain shell has no links
    assert result.stats["render/fallback"] == 1


@pytest_twisted.ensureDeferred
async def test_a_render_that_times_out_keeps_the_plain_page(server, crawl):
    shell_site(server)
    served: list[int] = []

    def slow_second_time(handler: Any) -> Reply:
        served.append(1)
        return Reply(body=SHELL, delay=0 if len(served) == 1 else 3)

    server.routes["/shell.html"] = slow_second_time
    result = await crawl(
        settings={"TRAVERSE_RENDER": "on-shell-warning", "DOWNLOAD_TIMEOUT": 1},
        url=server.url("/shell.html"),
    )
    (page,) = result.manifest["pages"]
    assert "rendered" not in page["fetch"]["snapshot"]
    escalation = page["fetch"]["renderEscalation"]
    assert escalation["outcome"] == "render-failed-fallback"
    assert escalation["renderError"] == {
        "kind": "render-error",
        "message": f"render of {server.url('/shell.html')} timed out after 1000ms",
    }
    assert len(served) == 2


@pytest_twisted.ensureDeferred
async def test_always_render_failure_is_a_render_error_on_that_page(server, crawl):
    shell_site(server)
    result = await crawl(
        settings={
            "TRAVERSE_RENDER": "always",
            "TRAVERSE_RENDER_WAIT_FOR": "#never-there",
            "DOWNLOAD_TIMEOUT": 2,
        },
        url=server.url("/shell.html"),
    )
    (page,) = result.manifest["pages"]
    assert page["fetch"]["error"]["kind"] == "render-error"
    assert page["fetch"]["error"]["message"].startswith(f"render of {server.url('/shell.html')}")
    assert "renderEscalation" not in page["fetch"]  # as in Traverse: an error has none
    assert "sourceRef" not in page


# -- waiting ------------------------------------------------------------------------------

LATE = """<html><body><p>late links</p><script>
setTimeout(() => {
  document.body.insertAdjacentHTML("beforeend", '<a class="late" href="late.html">late</a>');
}, 1500);
</script></body></html>"""


@pytest_twisted.ensureDeferred
async def test_wait_for_selector_takes_the_page_once_it_appears(server, crawl):
    server.site({"/late-start.html": LATE, "/late.html": '<p class="late">late</p>'})
    idle = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/late-start.html"))
    # Network idle comes long before the timer fires: the link is not there yet.
    assert [p["url"] for p in idle.manifest["pages"]] == [server.url("/late-start.html")]
    waited = await crawl(
        settings={"TRAVERSE_RENDER": "always", "TRAVERSE_RENDER_WAIT_FOR": ".late"},
        url=server.url("/late-start.html"),
    )
    assert [p["url"] for p in waited.manifest["pages"]] == [
        server.url("/late-start.html"),
        server.url("/late.html"),
    ]


@pytest_twisted.ensureDeferred
async def test_a_page_that_never_goes_idle_is_taken_with_a_warning(server, crawl):
    busy = """<html><body><p>busy</p><script>
    setInterval(() => fetch("/poll?" + Math.random()), 100);
    </script></body></html>"""
    server.site({"/busy.html": busy, "/poll": Reply(body="{}", content_type="application/json")})
    result = await crawl(
        settings={"TRAVERSE_RENDER": "always", "DOWNLOAD_TIMEOUT": 2},
        url=server.url("/busy.html"),
    )
    (page,) = result.manifest["pages"]
    assert page["fetch"]["snapshot"]["rendered"] is True
    assert page["fetch"]["warnings"] == ["render: networkidle fallback used after 2000ms"]
    assert result.manifest["warnings"] == [
        f"[depth 0] {server.url('/busy.html')}: render: networkidle fallback used after 2000ms"
    ]


# -- egress, robots, redirects, politeness --------------------------------------------


# What the page below asks of the refused server, when nothing stops it (the
# WebSocket, beacon and popup are attempted too; Chromium drops them on its own).
LEAKS = {
    "/style.css", "/lib.js", "/pixel.png", "/hop-target.png", "/frame.html",
    "/api", "/from-worker", "/prefetch.html",
}  # fmt: skip


def leaky_site(server: Server, refused: Server) -> None:
    r = refused.origin
    port = refused.server_address[1]
    page = f"""<html><head>
    <link rel="stylesheet" href="{r}/style.css"><link rel="stylesheet" href="/own.css">
    <script src="{r}/lib.js"></script></head><body><p>page</p>
    <img src="{r}/pixel.png"><img src="/hop.png">
    <iframe src="{r}/frame.html"></iframe>
    <a href="next.html">next</a>
    <script>
      fetch("{r}/api").catch(() => {{}});
      try {{ new WebSocket("ws://127.0.0.1:{port}/ws"); }} catch (e) {{}}
      navigator.sendBeacon("{r}/beacon", "x");
      window.open("{r}/popup.html");
      new Worker(URL.createObjectURL(new Blob(['fetch("{r}/from-worker")'])));
    </script>
    <link rel="prefetch" href="{r}/prefetch.html">
    </body></html>"""
    server.site(
        {
            "/page.html": page,
            "/own.css": Reply(body="p {color: red}", content_type="text/css"),
            # An allowed URL that redirects into the refused server.
            "/hop.png": Reply(302, headers={"Location": f"{r}/hop-target.png"}),
            "/next.html": "<p>next</p>",
        }
    )


@pytest_twisted.ensureDeferred
async def test_refused_subresources_are_never_sent(server, refused, crawl):
    leaky_site(server, refused)
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/page.html"))
    assert refused.paths() == []
    pages = by_url(result.manifest)
    assert pages[server.url("/page.html")]["fetch"]["snapshot"]["rendered"] is True
    assert server.url("/next.html") in pages
    # The page's own sub-resources were fetched, the allowed hop included.
    assert server.count("/own.css") == 1
    assert server.count("/hop.png") == 1
    assert result.stats["render/egress_blocked"] >= len(LEAKS)


@pytest_twisted.ensureDeferred
async def test_without_the_guard_the_same_page_reaches_the_refused_server(server, refused, crawl):
    # The control for the test above: its page really does send all of that.
    leaky_site(server, refused)
    await crawl(
        settings={"TRAVERSE_RENDER": "always", "TRAVERSE_EGRESS_GUARD": False},
        url=server.url("/page.html"),
    )
    assert set(refused.paths()) >= LEAKS


@pytest_twisted.ensureDeferred
async def test_a_rendered_navigation_redirected_into_a_refused_address_is_egress_denied(
    server, refused, crawl
):
    server.site({"/go.html": Reply(302, headers={"Location": refused.url("/target.html")})})
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/go.html"))
    (page,) = result.manifest["pages"]
    assert page["fetch"]["error"]["kind"] == "egress-denied"
    assert refused.paths() == []


@pytest_twisted.ensureDeferred
async def test_rendered_redirects_go_through_scrapy_and_the_final_url_decides(server, crawl):
    server.site(
        {
            "/start.html": Reply(301, headers={"Location": "/final/page.html"}),
            "/final/page.html": """<div id=app></div><script>
              document.getElementById("app").innerHTML = '<a href="next.html">n</a>';</script>""",
            "/final/next.html": "<p>next</p>",
        }
    )
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/start.html"))
    first, second = result.manifest["pages"]
    snapshot = first["fetch"]["snapshot"]
    assert first["url"] == server.url("/start.html")
    assert snapshot["url"] == server.url("/final/page.html")
    assert snapshot["redirects"] == [server.url("/start.html")]
    assert snapshot["rendered"] is True
    # Links resolve against the final URL.
    assert second["url"] == server.url("/final/next.html")
    assert result.stats["render/handed_back"] == 1


@pytest_twisted.ensureDeferred
async def test_robots_is_checked_before_the_browser_navigates(server, crawl):
    server.site(
        {
            "/robots.txt": ROBOTS,
            "/home.html": """<div id=app></div><script>
              const app = document.getElementById("app");
              app.innerHTML = '<a href="/private.html">p</a>';</script>""",
            "/private.html": "<p>secret</p>",
        }
    )
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/home.html"))
    pages = by_url(result.manifest)
    assert pages[server.url("/private.html")]["fetch"]["error"]["kind"] == "robots-denied"
    assert server.count("/private.html") == 0
    assert server.count("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_client_side_navigation_is_followed_like_a_redirect(server, crawl):
    server.site(
        {
            "/robots.txt": ROBOTS,
            "/jump.html": '<p>jump</p><script>location.href = "/landing.html";</script>',
            "/landing.html": '<a href="script.html">s</a><a href="refresh.html">r</a>',
            "/script.html": '<script>location.replace("/private.html")</script>',
            "/refresh.html": '<meta http-equiv="refresh" content="0; url=/private.html">',
            "/private.html": "<p>secret</p>",
        }
    )
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/jump.html"))
    jump, script, refresh = result.manifest["pages"]
    snapshot = jump["fetch"]["snapshot"]
    assert snapshot["url"] == server.url("/landing.html")
    assert snapshot["redirects"] == [server.url("/jump.html")]
    assert snapshot["rendered"] is True
    # Every hop passes robots: a navigation into a disallowed path is denied.
    for page in (script, refresh):
        assert page["fetch"]["error"]["kind"] == "robots-denied"
    assert server.count("/private.html") == 0
    assert result.stats["render/client_redirects"] == 3


@pytest_twisted.ensureDeferred
async def test_non_html_documents_are_captured_as_fetched(server, crawl):
    pdf = b"%PDF-1.4\n" + bytes(range(256))
    server.site(
        {
            "/docs.html": '<a href="paper.pdf">paper</a>',
            "/paper.pdf": Reply(body=pdf, content_type="application/pdf"),
        }
    )
    result = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/docs.html"))
    pages = by_url(result.manifest)
    paper = pages[server.url("/paper.pdf")]["fetch"]
    assert paper["snapshot"]["contentType"] == "pdf"
    assert "rendered" not in paper["snapshot"]
    assert paper["renderEscalation"]["outcome"] == "not-needed"
    assert server.count("/paper.pdf") == 1


@pytest_twisted.ensureDeferred
async def test_politeness_spaces_rendered_pages(server, crawl):
    server.site(
        {
            "/p0.html": '<a href="p1.html">1</a><a href="p2.html">2</a>',
            "/p1.html": "<p>1</p>",
            "/p2.html": "<p>2</p>",
        }
    )
    result = await crawl(
        settings={"TRAVERSE_RENDER": "always", "TRAVERSE_MIN_DELAY": 0.3},
        url=server.url("/p0.html"),
    )
    assert len(result.manifest["pages"]) == 3
    with server.lock:
        pages = [h for h in server.hits if h.path != "/robots.txt"]
    assert [h.path for h in pages] == ["/p0.html", "/p1.html", "/p2.html"]
    for before, after in itertools.pairwise(pages):
        assert after.start - before.end >= 0.29


# -- replay ----------------------------------------------------------------------------


@pytest_twisted.ensureDeferred
async def test_rendered_snapshots_replay_without_a_browser(server, crawl):
    server.site(
        {
            "/app.html": JS_LINKS,
            "/links.json": Reply(body='["one.html"]', content_type="application/json"),
            "/one.html": "<p>one</p>",
        }
    )
    captured = await crawl(settings={"TRAVERSE_RENDER": "always"}, url=server.url("/app.html"))
    hits = len(server.paths())
    replayed = await crawl(
        settings={
            "TRAVERSE_MODE": "replay",
            "TRAVERSE_RENDER": "always",
            # No browser could start from here: replay must not need one.
            "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": "/nonexistent/chrome"},
        },
        url=server.url("/app.html"),
    )
    assert len(server.paths()) == hits
    before = captured.manifest["pages"]
    after = replayed.manifest["pages"]
    assert [p["url"] for p in after] == [p["url"] for p in before]
    assert [p["sourceRef"] for p in after] == [p["sourceRef"] for p in before]
    for page in after:
        assert page["fetch"]["snapshot"]["rendered"] is True
        assert page["fetch"]["snapshot"]["fromCache"] is True
    assert not [key for key in replayed.stats if key.startswith("playwright/")]
