"""``TRAVERSE_SKIPPED``: each seed's ``.skipped.jsonl``, through ``scrapy crawl`` at a real site."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

BUDGETS = [
    "-s", "TRAVERSE_MAX_DEPTH=2", "-s", "TRAVERSE_MAX_PAGES=8",
    "-s", "TRAVERSE_MAX_LINKS_PER_PAGE=3",
]  # fmt: skip


def links(*hrefs: str) -> str:
    return "<html><body>" + "".join(f'<a href="{h}">{h}</a>' for h in hrefs) + "</body></html>"


def skipping_site(server: Server) -> None:
    """A page of every kind of link the frontier does not admit."""
    server.site(
        {
            "/robots.txt": Reply(
                body="User-agent: *\nDisallow: /private\n", content_type="text/plain"
            ),
            "/": links(
                "/a", "http://other.invalid/x#part", "mailto:me@example.com", "javascript:void(0)",
                "/b", "/private", "/c", "/d", "/a", "http://other.invalid/x",
            ),  # 3 links a page: /c and /d are cut, /c is admitted from /a
            # Slow, so that at concurrency 16 later pages are fetched before it.
            "/a": Reply(body=links("/c", "/a1", "/a2"), delay=0.3),
            "/b": links("http://another.invalid/", "/b1", "/b2"),  # /b1 is the 8th page
            "/c": links("/c1", "/d"),  # /d: noted from / already
            "/a1": links("/deep1", "/", "mailto:me@example.com"),
            "/a2": Reply(body=links("/deep1", "/deep2"), delay=0.1),
            "/b1": links(),
            "/private": links("/never"),
        }
    )  # fmt: skip


def expected(server: Server) -> list[dict]:
    u = server.url
    rows = [
        ("http://other.invalid/x", "off-origin", u("/"), 1),
        ("mailto:me@example.com", "not-http", u("/"), 1),
        ("javascript:void(0)", "not-http", u("/"), 1),
        (u("/d"), "link-limit", u("/"), 1),
        ("http://another.invalid/", "off-origin", u("/b"), 2),
        (u("/b2"), "max-pages", u("/b"), 2),
        (u("/private"), "robots-denied", u("/"), 1),
        (u("/c1"), "max-depth", u("/c"), 3),  # /c is at depth 2, from /a
        (u("/deep1"), "max-depth", u("/a1"), 3),
        (u("/deep2"), "max-depth", u("/a2"), 3),
    ]
    return [{"url": a, "reason": b, "from": c, "depth": d} for a, b, c, d in rows]


def crawl(server: Server, tmp: Path, *extra: str) -> tuple[Path, subprocess.CompletedProcess[str]]:
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=site",
        *crawl_args(tmp, server.origin), *BUDGETS, *extra,
    )  # fmt: skip
    return tmp / "manifests" / f"{source_dir_name('site')}.skipped.jsonl", run


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("concurrency", ["1", "16"])
def test_the_skipped_file_lists_every_link_not_admitted_in_discovery_order(
    server, tmp_path, concurrency
):
    skipping_site(server)
    path, run = crawl(
        server, tmp_path, "-s", "TRAVERSE_SKIPPED=True",
        "-s", f"CONCURRENT_REQUESTS={concurrency}",
        "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert read(path) == expected(server)
    manifest = json.loads(path.with_name(f"{source_dir_name('site')}.json").read_text())
    assert len(manifest["pages"]) == 8
    # Only the manifest and its skipped file: no temporary file left beside them.
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, f"{source_dir_name('site')}.json"]
    )


def test_off_by_default_no_skipped_file(server, tmp_path):
    skipping_site(server)
    path, run = crawl(server, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert path.with_name(f"{source_dir_name('site')}.json").exists()
    assert not path.exists()


def test_a_resumed_crawl_writes_each_skipped_url_once(server, tmp_path):
    skipping_site(server)
    job = ("-s", f"JOBDIR={tmp_path / 'job'}", "-s", "TRAVERSE_SKIPPED=True")
    path, stopped = crawl(server, tmp_path, *job, "-s", "CLOSESPIDER_PAGECOUNT=3")
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    assert len(read(path)) < len(expected(server))
    path, resumed = crawl(server, tmp_path, *job)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed with" in resumed.stderr
    assert read(path) == expected(server)


def test_the_report_counts_the_skipped_urls_by_reason_and_host(server, tmp_path):
    skipping_site(server)
    _, run = crawl(server, tmp_path, "-s", "TRAVERSE_SKIPPED=True")
    assert run.returncode == 0, run.stderr[-2000:]
    out = tmp_path / "report.html"
    report = scrapy("report", str(tmp_path / "manifests"), "-o", str(out))
    assert report.returncode == 0, report.stderr
    html = out.read_text(encoding="utf-8")
    assert 'Links not followed (<span class="skipped-total">10</span>)' in html
    for reason, n in [
        ("not-http", 2), ("max-depth", 3), ("off-origin", 2), ("link-limit", 1),
        ("max-pages", 1), ("robots-denied", 1),
    ]:  # fmt: skip
        assert f'<tr><td>{reason}</td><td class="n">{n}</td>' in html
    assert '<tr><td>other.invalid</td><td class="n">1</td>' in html
    assert '<tr><td>another.invalid</td><td class="n">1</td>' in html
