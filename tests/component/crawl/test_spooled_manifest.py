"""Real crawls whose pages wait in the spool, not in memory.

The manifest a crawl writes is streamed from the spool: it must be exactly the
bytes ``json.dump(manifest, indent=2, ensure_ascii=False)`` makes of it, and its
pages exactly the page objects the crawl built in memory (its items), with errors,
truncation, sitemaps, a stop and a resume, every page spilled to the spool file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support.jobdir_helpers import comparable
from tests.support.server import Reply
from tests.support.sitemapsite import listed, shop, urlset
from traverse_crawl.crawl import spool as pagelog


@pytest.fixture(autouse=True)
def spill_every_page(monkeypatch):
    monkeypatch.setattr(pagelog, "SPILL_BYTES", 1)


def written(directory: Path) -> dict[str, Any]:
    """The one file in the manifest directory, checked to be the canonical dump."""
    assert [p.name for p in directory.iterdir()] == [next(directory.glob("*.json")).name]
    raw = next(directory.glob("*.json")).read_bytes()
    found = json.loads(raw)
    assert raw == json.dumps(found, indent=2, ensure_ascii=False).encode("utf-8")
    return found  # type: ignore[no-any-return]


def as_built(items: list[dict[str, Any]], manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The crawl's own page objects (its items), in the manifest's order."""
    by_id = {item["id"]: item for item in items}
    return [by_id[page["id"]] for page in manifest["pages"]]


def site(server, pages: int = 12) -> None:
    u = server.url
    sitemap = urlset(u("/orphan2.html"), u("/a.html"), u("/orphan1.html"), u("/orphan3.html"))
    shop(server, listed(server, "/sitemap.xml"), **{"sitemap.xml": sitemap})
    extra: dict[str, str | Reply] = {
        "/": '<a href="/a.html">a</a> <a href="/b.html">b</a> <a href="/gone">g</a>'
        + "".join(f'<a href="/n{i}?q=ü">{i}</a>' for i in range(pages)),
        "/gone": Reply(status=404, body="no"),
        "/b.html": '<p>b</p><a href="/b.html#x">self</a><a href="/broken">x</a>',
        "/broken": Reply(status=500, body="oops"),
    }
    extra.update({f"/n{i}?q=%C3%BC": f"<p>née {i} “quoted”</p>" for i in range(pages)})
    server.site(extra)


@pytest_twisted.ensureDeferred
async def test_errors_sitemaps_truncation_streamed_equal_the_pages_built(server, crawl, tmp_path):
    site(server, pages=8)
    settings = {"TRAVERSE_SITEMAPS": "robots", "TRAVERSE_MAX_PAGES": 17, "RETRY_TIMES": 0}
    result = await crawl(settings=settings, url=server.url("/"), source_id="spool ü")
    manifest = written(result.manifest_dir)
    assert manifest["pages"] == as_built(result.items, manifest)
    assert len(manifest["pages"]) == 17 and manifest["truncated"] is True
    kinds = {p["fetch"]["error"]["kind"] for p in manifest["pages"] if "error" in p["fetch"]}
    assert kinds == {"http-error"}
    assert any(p["url"].endswith("/orphan1.html") for p in manifest["pages"])
    assert manifest["warnings"][-1].startswith("maxPages cap (17) reached;")
    assert result.stats.get("manifest/spool_error") is None


@pytest_twisted.ensureDeferred
async def test_a_stop_then_a_resume_write_streamed_manifests(server, crawl, tmp_path):
    site(server, pages=30)
    base = {"TRAVERSE_SITEMAPS": "robots", "RETRY_TIMES": 0, "CONCURRENT_REQUESTS": 2}
    whole = await crawl(settings={**base, "TRAVERSE_MANIFEST_DIR": str(tmp_path / "whole")},
                        url=server.url("/"), source_id="s")  # fmt: skip
    expected = written(tmp_path / "whole")
    (tmp_path / "job").mkdir()
    job = {**base, "JOBDIR": str(tmp_path / "job")}
    first = await crawl(settings={**job, "CLOSESPIDER_ITEMCOUNT": 8}, url=server.url("/"),
                        source_id="s")  # fmt: skip
    stopped = written(first.manifest_dir)
    assert stopped["warnings"][-1].startswith("crawl stopped before this seed finished")
    assert 1 <= len(stopped["pages"]) < len(expected["pages"])
    assert stopped["pages"] == as_built(first.items, stopped)
    second = await crawl(settings=job)  # the seeds from the JOBDIR
    resumed = written(second.manifest_dir)
    assert comparable(resumed) == comparable(expected)
    assert resumed["pages"][: len(stopped["pages"])] == stopped["pages"]  # kept, not refetched
    built = {item["id"]: item for item in second.items}
    assert {p["id"]: p for p in resumed["pages"] if p["id"] in built} == built
    assert len(whole.items) == len(expected["pages"])
