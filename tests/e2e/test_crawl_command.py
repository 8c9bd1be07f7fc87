"""``scrapy crawl traverse`` as a user runs it: exit status, manifest, feed."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.component.crawl.test_bfs_crawl import fixture_site
from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.server import Reply
from traverse_crawl.snapshots.store import source_dir_name


def test_crawl_writes_manifest_and_feed(server, tmp_path):
    fixture_site(server)
    feed = tmp_path / "pages.jsonl"
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/home.html')}", "-a", "source_id=site",
        *crawl_args(tmp_path, server.origin), "-O", str(feed),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    manifest_file = tmp_path / "manifests" / f"{source_dir_name('site')}.json"
    manifest = json.loads(manifest_file.read_text())
    assert [p["depth"] for p in manifest["pages"]] == [0, 1, 1, 2, 2]
    assert manifest["mode"] == "capture"
    items = [json.loads(line) for line in feed.read_text().splitlines()]
    assert sorted(items, key=lambda p: p["id"]) == sorted(manifest["pages"], key=lambda p: p["id"])
    assert "Traceback" not in run.stderr


def test_the_crawl_runs_with_the_frontiers_own_settings(server, tmp_path):
    """``scrapy crawl traverse`` merges the project's settings again after the spider's
    own: the crawl still sends no Referer and runs without Scrapy's depth middleware."""
    fixture_site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/home.html')}",
        *crawl_args(tmp_path, server.origin),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    pages = [hit for hit in server.hits if hit.path != "/robots.txt"]
    assert len(pages) == 5
    assert all("referer" not in {name.lower() for name in hit.headers} for hit in pages)
    enabled = run.stderr.split("Enabled spider middlewares:", 1)[1].split("\n2", 1)[0]
    assert "DepthMiddleware" not in enabled and "RefererMiddleware" not in enabled


def test_failed_pages_still_exit_zero(tmp_path):
    run = scrapy("crawl", "traverse", "-a", "url=not a url", *crawl_args(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    (manifest_file,) = (tmp_path / "manifests").glob("*.json")
    page = json.loads(manifest_file.read_text())["pages"][0]
    assert page["fetch"]["error"]["kind"] == "invalid-url"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ([], "url/seeds"),
        (["-a", "url=http://127.0.0.1:9/", "-a", "seeds=x.txt"], "url/seeds"),
        (["-a", "seeds=/nonexistent/seeds.txt"], "seeds"),
        (["-a", "url=URL", "-a", "content_type=gif"], "content_type"),
        (["-a", "url=URL", "-s", "TRAVERSE_MODE=mirror"], "TRAVERSE_MODE"),
        (["-a", "url=URL", "-s", "TRAVERSE_MAX_PAGES=-1"], "TRAVERSE_MAX_PAGES"),
        (["-a", "url=URL", "-s", "TRAVERSE_MAX_PAGES=2.5"], "TRAVERSE_MAX_PAGES"),
        (["-a", "url=URL", "-s", "TRAVERSE_MAX_DEPTH=many"], "TRAVERSE_MAX_DEPTH"),
        (["-a", "url=URL", "-s", "TRAVERSE_REVALIDATE=maybe"], "TRAVERSE_REVALIDATE"),
        (["-a", "url=URL", "-s", "ROBOTSTXT_OBEY=perhaps"], "ROBOTSTXT_OBEY"),
        (["-a", "url=URL", "-s", "TRAVERSE_EGRESS_ALLOW=not-an-origin"], "TRAVERSE_EGRESS_ALLOW"),
        (["-a", "url=URL", "-s", "TRAVERSE_STORE=/proc/no/such/dir"], "TRAVERSE_STORE"),
    ],
)
def test_invalid_arguments_and_settings_fail_before_any_request(server, tmp_path, args, named):
    server.site({"/": "home"})
    args = [a.replace("URL", server.url("/")) for a in args]
    run = scrapy("crawl", "traverse", *crawl_args(tmp_path, server.origin), *args)
    assert run.returncode != 0
    assert f"error: {named}" in run.stderr
    assert "Traceback" not in run.stderr
    assert server.hits == []


def test_ctrl_c_writes_the_partial_manifest(server, tmp_path):
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(30))
    server.site({"/": links, **{f"/p{i}": Reply(body="p", delay=0.2) for i in range(30)}})
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
         *crawl_args(tmp_path, server.origin), "-s", "CONCURRENT_REQUESTS=1",
         "-s", "TRAVERSE_MAX_PAGES=100"],
        cwd=REPO, env=scrapy_env(), stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while server.count("/p2") == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    (manifest_file,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(manifest_file.read_text())
    assert 3 <= len(manifest["pages"]) < 31, stderr[-2000:]
    assert manifest["truncated"] is True
    assert manifest["warnings"][-1].startswith(
        "crawl stopped before this seed finished (shutdown); "
    )
