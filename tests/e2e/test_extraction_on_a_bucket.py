"""Extraction with an ``s3://`` store, manifest directory and ``TRAVERSE_ITEMS_DIR``: the
crawl writes each seed's items file into the bucket, with the same items as a capture
into directories, and ``scrapy extract`` and ``--verify`` read the store from the bucket."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.s3server import S3Server
from tests.support.server import Server

pytestmark = pytest.mark.s3


def places(tmp_path: Path, bucket: str | None) -> list[str]:
    root = f"s3://{bucket}" if bucket else str(tmp_path)
    return [
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={root}/items",
        "-s", f"TRAVERSE_STORE={root}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR={root}/manifests",
    ]  # fmt: skip


def without_capture_time(data: bytes) -> list[dict]:
    """The items, each without its sourceRef (which names the capture's fetchedAt)."""
    items = [json.loads(line) for line in data.splitlines()]
    for item in items:
        item.pop("sourceRef")
    return items


def test_items_files_go_to_the_bucket_and_extract_reads_the_bucket(
    server: Server, tmp_path: Path, s3_server: S3Server
):
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    server.site(product_site.PAGES)
    bucket = s3_server.new_bucket()
    common = [*crawl_args(tmp_path, server.origin), "-a", f"url={server.url('/')}",
              "-a", "source_id=site", *s3_server.setting_args()]  # fmt: skip
    run = scrapy("crawl", "traverse", *common, *places(tmp_path, bucket))
    assert run.returncode == 0, run.stderr
    run = scrapy("crawl", "traverse", *common, *places(tmp_path, None))
    assert run.returncode == 0, run.stderr

    (in_bucket,) = s3_server.objects(bucket, "items/").values()
    (on_disk,) = (tmp_path / "items").glob("*.jsonl")
    assert len(in_bucket.splitlines()) == 5
    assert without_capture_time(in_bucket) == without_capture_time(on_disk.read_bytes())

    # Offline, from the bucket's store and manifests: the same bytes again.
    server.shutdown()
    server.server_close()
    args = [*s3_server.setting_args(), *places(tmp_path, bucket)]
    run = scrapy("extract", *args)
    assert run.returncode == 0, run.stderr
    (again,) = s3_server.objects(bucket, "items/").values()
    assert again == in_bucket

    local = tmp_path / "from-bucket.jsonl"
    local.write_bytes(in_bucket)
    run = scrapy("extract", "--verify", str(local), *args)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 item(s)" in run.stdout
