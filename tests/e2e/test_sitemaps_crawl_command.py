"""Sitemaps under ``scrapy crawl``: read when asked, a bad ``TRAVERSE_SITEMAPS`` refused."""

from __future__ import annotations

import json

from tests.support.cli import crawl_args, scrapy
from tests.support.sitemapsite import listed, shop, urlset


def test_cli_crawl_reads_sitemaps_and_checks_the_setting(server, tmp_path):
    u = server.url
    shop(server, listed(server, "/sitemap.xml"), **{"sitemap.xml": urlset(u("/orphan1.html"))})
    bad = scrapy("crawl", "traverse", "-a", f"url={u('/')}", *crawl_args(tmp_path, server.origin),
                 "-s", "TRAVERSE_SITEMAPS=yes")  # fmt: skip
    assert bad.returncode != 0
    assert "error: TRAVERSE_SITEMAPS" in bad.stderr and "'auto'" in bad.stderr
    assert server.hits == []
    run = scrapy("crawl", "traverse", "-a", f"url={u('/')}", *crawl_args(tmp_path, server.origin),
                 "-s", "TRAVERSE_SITEMAPS=robots", "-s", "TRAVERSE_MAX_DEPTH=1")  # fmt: skip
    assert run.returncode == 0, run.stderr
    (manifest_file,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    assert [p["url"] for p in manifest["pages"]][3:] == [u("/orphan1.html")]
    assert "'sitemap/fetched': 1" in run.stderr
