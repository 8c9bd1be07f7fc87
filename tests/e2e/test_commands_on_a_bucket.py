"""Every command that reads a store or manifests reads them from an ``s3://`` bucket too:
``snapshots``, ``snapshot``, ``report``, ``diff`` and ``warc export|import``."""

from __future__ import annotations

import json
from typing import Any

import pytest
import pytest_twisted

from tests.e2e.test_snapshot_commands import HOME, PNG
from tests.support.cli import scrapy
from tests.support.s3server import S3Server
from tests.support.server import Reply
from traverse_crawl.snapshots.store import open_snapshot_store

pytestmark = pytest.mark.s3


def bucket_args(s3: S3Server, bucket: str) -> list[str]:
    return [*s3.setting_args(), "-s", f"TRAVERSE_STORE=s3://{bucket}/snapshots"]


async def capture_twice(server: Any, crawl: Any, s3: S3Server, bucket: str) -> list[dict[str, Any]]:
    server.site({"/home.html": HOME, "/img.png": Reply(body=PNG, content_type="image/png")})
    settings = {
        **s3.settings(),
        "TRAVERSE_STORE": f"s3://{bucket}/snapshots",
        "TRAVERSE_MANIFEST_DIR": f"s3://{bucket}/old",
    }
    await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    server.site({"/home.html": HOME + "<p>v2</p>"})
    settings["TRAVERSE_MANIFEST_DIR"] = f"s3://{bucket}/new"
    await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    return [
        json.loads(next(iter(s3.objects(bucket, f"{name}/").values()))) for name in ("old", "new")
    ]


@pytest_twisted.ensureDeferred
async def test_snapshots_snapshot_report_and_diff_read_the_bucket(
    server, crawl, tmp_path, s3_server
):
    bucket = s3_server.new_bucket()
    old, new = await capture_twice(server, crawl, s3_server, bucket)
    args = bucket_args(s3_server, bucket)

    run = scrapy("snapshots", "s", "--json", *args)
    assert run.returncode == 0, run.stderr
    refs = {json.loads(line)["sourceRef"] for line in run.stdout.splitlines()}
    assert refs == {p["sourceRef"] for m in (old, new) for p in m["pages"]}

    png = next(p for p in old["pages"] if p["url"].endswith(".png"))
    out = tmp_path / "out.png"
    run = scrapy("snapshot", png["sourceRef"], "-o", str(out), *args)
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == PNG
    run = scrapy("snapshot", old["pages"][0]["sourceRef"], *args)
    assert run.returncode == 0, run.stderr
    assert run.stdout == HOME

    run = scrapy("diff", "--json", "--bodies", f"s3://{bucket}/old", f"s3://{bucket}/new", *args)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["counts"]["changed"] == 1, found
    assert "v2" in json.dumps(found)  # the body diff was read from the bucket

    report = tmp_path / "report.html"
    run = scrapy(
        "report", f"s3://{bucket}/new", "--against", f"s3://{bucket}/old", "-o", str(report), *args
    )
    assert run.returncode == 0, run.stderr
    assert server.url("/home.html") in report.read_text(encoding="utf-8")

    run = scrapy("diff", f"s3://{bucket}/nothing-here", f"s3://{bucket}/new", *args)
    assert run.returncode == 2
    assert f"error: s3://{bucket}/nothing-here: holds no manifest (*.json)" in run.stderr


@pytest_twisted.ensureDeferred
async def test_warc_export_from_and_import_into_a_bucket(server, crawl, tmp_path, s3_server):
    bucket = s3_server.new_bucket()
    await capture_twice(server, crawl, s3_server, bucket)
    archive = tmp_path / "out.warc.gz"
    run = scrapy("warc", "export", "-o", str(archive), *bucket_args(s3_server, bucket))
    assert run.returncode == 0, run.stderr
    assert "exported 4 snapshot(s)" in run.stdout

    target = s3_server.new_bucket()
    run = scrapy(
        "warc", "import", str(archive), "--source-id", "t", *bucket_args(s3_server, target)
    )
    assert run.returncode == 0, run.stderr
    assert f"into s3://{target}/snapshots" in run.stdout
    store = open_snapshot_store(f"s3://{target}/snapshots", s3_server.settings())
    imported = list(store.walk())
    assert {s["url"] for s in imported} == {server.url("/home.html"), server.url("/img.png")}
