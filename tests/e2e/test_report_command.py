"""``scrapy report``: the demo crawl's report in the real Chromium, offline; escaping;
``--against``; manifests without the optional fields."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.e2e.test_diff_command import two_captures
from tests.support.cli import REPO, scrapy, scrapy_env
from traverse_crawl.rendering.browser import launch_options


def in_chromium(work: Callable[[Any], Any]) -> Any:
    """``work(context)`` in Debian's Chromium, offline, with every request recorded.

    Playwright's sync API runs in its own thread: this process's asyncio reactor
    must not see it. ``context.requests`` lists every URL the page asked for.
    """
    from playwright.sync_api import sync_playwright

    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            with sync_playwright() as driver:
                browser = driver.chromium.launch(**launch_options({}))
                try:
                    context = browser.new_context(
                        offline=True, viewport={"width": 1280, "height": 1000}
                    )
                    context.requests = []

                    def block(route: Any) -> None:
                        context.requests.append(route.request.url)
                        if route.request.url.startswith("file://"):
                            route.continue_()
                        else:
                            route.abort()

                    context.route("**/*", block)
                    outcome["value"] = work(context)
                finally:
                    browser.close()
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def distinct_colours(context: Any, png: bytes) -> int:
    """How many colours a PNG has, counted by the browser's canvas (no image library)."""
    import base64

    page = context.new_page()
    page.set_content("<canvas id=c></canvas>")
    return int(
        page.evaluate(
            """async (data) => {
                const img = new Image(); img.src = "data:image/png;base64," + data;
                await img.decode();
                const c = document.getElementById("c");
                c.width = img.width; c.height = img.height;
                const g = c.getContext("2d"); g.drawImage(img, 0, 0);
                const px = g.getImageData(0, 0, c.width, c.height).data;
                const seen = new Set();
                for (let i = 0; i < px.length; i += 28)
                    seen.add(px[i] << 16 | px[i+1] << 8 | px[i+2]);
                return seen.size;
            }""",
            base64.b64encode(png).decode("ascii"),
        )
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's demo command: capture, replay, and the capture's report."""
    out = tmp_path_factory.mktemp("demo")
    run = subprocess.run(
        [sys.executable, "-m", "traverse_crawl.demo", str(out)],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return out


@pytest.mark.browser
def test_demo_report_in_chromium_offline_is_complete_and_not_blank(demo):
    (manifest,) = [
        p for p in (demo / "manifests-capture").glob("*.json") if ".checks." not in p.name
    ]
    pages = json.loads(manifest.read_text())["pages"]
    failed = [p["url"] for p in pages if "error" in p["fetch"]]
    url = (demo / "report.html").as_uri()

    def look(context: Any) -> dict[str, Any]:
        page = context.new_page()
        page.goto(url)
        shot = page.screenshot(full_page=True)
        found = page.evaluate(
            """() => ({
                pages: document.querySelector(".summary .pages").textContent,
                outcome: [...document.querySelectorAll(".totals-outcome tr")]
                    .map(r => r.innerText.trim().replace(/\\s+/g, " ")),
                depths: [...document.querySelectorAll("svg.depth-chart g.depth")]
                    .map(g => [+g.dataset.depth, +g.dataset.ok, +g.dataset.failed]),
                nodes: [...document.querySelectorAll("svg.crawl-tree circle.node")]
                    .map(c => c.querySelector("title").textContent),
                failed: [...document.querySelectorAll("svg.crawl-tree circle.node.fail")]
                    .map(c => c.querySelector("title").textContent),
                edges: document.querySelector("svg.crawl-tree path.edge")
                    .getAttribute("d").split("M").length - 1,
                scripts: document.scripts.length,
                treeWidth: document.querySelector("svg.crawl-tree").getBoundingClientRect().width,
            })"""
        )
        found["colours"] = distinct_colours(context, shot)
        found["requests"] = list(context.requests)
        return found

    found = in_chromium(look)
    # Opened from disk with the network blocked: the report asked for nothing else.
    assert found["requests"] == [url]
    assert found["scripts"] == 0
    assert found["colours"] > 20  # a rendered page, not a blank one
    assert found["pages"] == str(len(pages))
    assert found["outcome"][0] == "Outcome pages"
    assert "robots-denied 1" in found["outcome"]
    by_depth: dict[int, list[int]] = {}
    for p in pages:
        by_depth.setdefault(p["depth"], [0, 0])[1 if "error" in p["fetch"] else 0] += 1
    assert found["depths"] == [[d, ok, bad] for d, (ok, bad) in sorted(by_depth.items())]
    # The graph: one node per page, each titled with its URL; failed pages marked.
    assert [t.split(" — ")[0] for t in found["nodes"]] == [p["url"] for p in pages]
    assert [t.split(" — ")[0] for t in found["failed"]] == failed and failed
    assert found["edges"] == len(pages) - 1  # a tree: every page but the seed has its edge
    assert found["treeWidth"] > 300


@pytest.mark.browser
def test_a_url_with_script_is_text_in_the_browser(tmp_path):
    hostile = '<script>document.title="owned"</script>'
    seed = f"http://127.0.0.1:9/{hostile}"
    manifest = {
        "seed": {"id": hostile, "url": seed},
        "mode": "capture",
        "pages": [
            {
                "id": "x",
                "url": seed,
                "depth": 0,
                "fetch": {"error": {"kind": "invalid-url", "message": f"bad: {hostile}"}},
            },
        ],
        "warnings": [f"[depth 0] {seed}: {hostile}"],
        "truncated": False,
    }
    (tmp_path / "m.json").write_text(json.dumps(manifest))
    out = tmp_path / "r.html"
    run = scrapy("report", str(tmp_path / "m.json"), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert "<script" not in out.read_text()

    def look(context: Any) -> dict[str, Any]:
        page = context.new_page()
        page.goto(out.as_uri())
        return page.evaluate(
            "() => ({title: document.title, scripts: document.scripts.length,"
            " text: document.body.innerText})"
        )

    found = in_chromium(look)
    assert found["scripts"] == 0 and found["title"] != "owned"
    assert f"Seed {hostile} — {seed}" in found["text"]
    assert f"[depth 0] {seed}: {hostile}" in found["text"]


@pytest_twisted.ensureDeferred
async def test_against_colours_each_change(server, crawl, tmp_path):
    old, new = await two_captures(server, crawl, tmp_path)
    out = tmp_path / "report.html"
    run = scrapy("report", str(new), "--against", str(old), "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"report: {out}\n"
    html = out.read_text()
    for kind, path in [("added", "/new.html"), ("removed", "/gone.html"),
                       ("changed", "/edit.html"), ("failed", "/break.html"),
                       ("recovered", "/fix.html")]:  # fmt: skip
        row = f'<tr class="c-{kind}"><td><span class="k k-{kind}">{kind}</span></td>'
        assert f'{row}<td class="url">{server.url(path)}</td>' in html
        ring = rf'<circle class="node \w+ c-{kind}"[^>]*><title>{re.escape(server.url(path))} — '
        assert (re.search(ring, html) is not None) == (kind != "removed")  # no node if removed
    assert '<span class="k k-unchanged">1 unchanged</span>' in html
    assert server.url("/same.html") + "</td>" not in html.split('class="changes"')[1]


@pytest_twisted.ensureDeferred
async def test_manifest_without_the_optional_fields_uses_the_store(server, crawl, tmp_path):
    site = {"/": '<a href="/a">a</a><a href="/b">b</a>', "/a": '<a href="/a/1">1</a>',
            "/b": '<a href="/a/1">1</a>', "/a/1": "<p>leaf</p>"}  # fmt: skip
    server.site(dict(site))
    result = await crawl(url=server.url("/"), source_id="s")
    recorded = result.manifest
    assert [p.get("discoveredFrom") for p in recorded["pages"]] == [
        None, server.url("/"), server.url("/"), server.url("/a"),
    ]  # fmt: skip
    assert [p["bodySize"] for p in recorded["pages"]] == [len(b) for b in site.values()]
    stripped = json.loads(json.dumps(recorded))
    for page in stripped["pages"]:
        page.pop("discoveredFrom", None)
        page.pop("bodySize", None)
    (tmp_path / "old.json").write_text(json.dumps(stripped))
    store = ["-s", f"TRAVERSE_STORE={tmp_path / 'store'}"]

    def tree_of(*args: str) -> str:
        out = tmp_path / "r.html"
        run = scrapy("report", *args, "-o", str(out))
        assert run.returncode == 0, run.stderr
        html = out.read_text()
        begin = html.index('<svg class="crawl-tree')
        return html[begin : html.index("</svg>", begin)]

    from_fields = tree_of(str(result.manifest_dir))
    from_store = tree_of(str(tmp_path / "old.json"), *store)
    assert from_store == from_fields  # the same tree, derived from the stored bodies
    html = (tmp_path / "r.html").read_text()
    assert "4 stored bodies were read" in html and f">{len(site['/'])}</td>" in html
    without = tree_of(str(tmp_path / "old.json"), "-s", f"TRAVERSE_STORE={tmp_path}/none")
    assert without.count("<circle") == 4 and 'class="edge inferred"' in without
    assert "No page has a body size" in (tmp_path / "r.html").read_text()


def test_bad_input_exits_2_naming_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"seed": {"id": "s"}}')
    run = scrapy("report", str(bad), "-o", str(tmp_path / "r.html"))
    assert (run.returncode, run.stderr) == (
        2,
        f"error: {bad}: not a traverse manifest: no pages list\n",
    )
    assert not (tmp_path / "r.html").exists()
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"seed": {"id": "s", "url": "u"}, "pages": []}))
    run = scrapy("report", str(good), "--against", str(tmp_path / "nope"), "-o", "r.html")
    assert run.returncode == 2 and run.stderr.startswith(f"error: {tmp_path / 'nope'}: cannot read")
    run = scrapy("report", str(good), "-o", str(good / "r.html"))  # under a file
    assert run.returncode == 1 and run.stderr.startswith("error: cannot write ")
