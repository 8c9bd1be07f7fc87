"""Rendering under ``scrapy crawl``: with the system Chromium, and without a browser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.component.rendering.test_rendered_crawls import shell_site
from tests.support.cli import crawl_args, scrapy


def test_scrapy_crawl_with_a_missing_browser_exits_non_zero_naming_it(server, tmp_path: Path):
    server.site({"/a.html": "<p>a</p>"})
    proc = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/a.html')}",
        *crawl_args(tmp_path, server.origin),
        "-s", "TRAVERSE_RENDER=always",
        "-s", 'PLAYWRIGHT_LAUNCH_OPTIONS={"executable_path": "/nonexistent/chrome"}',
    )  # fmt: skip
    assert proc.returncode == 2
    assert "error: PLAYWRIGHT_LAUNCH_OPTIONS: " in proc.stderr
    assert "/nonexistent/chrome" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert server.paths() == []
    assert not list((tmp_path / "manifests").glob("*.json"))


@pytest.mark.browser
def test_scrapy_crawl_renders_with_the_system_chromium(server, tmp_path: Path):
    shell_site(server)
    out = tmp_path / "pages.jsonl"
    proc = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/shell.html')}",
        *crawl_args(tmp_path, server.origin),
        "-s", "TRAVERSE_RENDER=on-shell-warning",
        "-O", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = out.read_text(encoding="utf-8").splitlines()
    # Feed order is arrival order (docs/architecture.md): a page's item can pass
    # the pipelines after the items of pages it links to.
    items = {item["url"]: item for item in map(json.loads, lines)}
    assert sorted(items) == [server.url("/deep.html"), server.url("/shell.html")]
    assert items[server.url("/shell.html")]["fetch"]["snapshot"]["rendered"] is True
