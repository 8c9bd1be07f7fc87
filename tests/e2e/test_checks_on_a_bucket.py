"""Checks with the manifests and items files in a bucket: the crawl writes each seed's
checks object beside its manifest object, and ``scrapy checks`` reads the bucket and
writes the same bytes, with the site gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_checks import CHECKS, FAILING, PAGES
from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.s3server import S3Server
from tests.support.server import Server

pytestmark = pytest.mark.s3


def test_checks_in_a_bucket_and_offline_from_it(
    server: Server, tmp_path: Path, s3_server: S3Server
):
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    (tmp_path / "checks.toml").write_text(CHECKS, encoding="utf-8")
    server.site(PAGES)
    bucket = s3_server.new_bucket()
    places = [
        *s3_server.setting_args(),
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_CHECKS={tmp_path / 'checks.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR=s3://{bucket}/items",
        "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
    ]  # fmt: skip
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *places,
        "-a", f"url={server.url('/')}", "-a", "source_id=site",
    )  # fmt: skip
    assert run.returncode == 3, run.stderr
    objects = s3_server.objects(bucket, "manifests/")
    (name,) = [key for key in objects if key.endswith(".checks.json")]
    assert name.removesuffix(".checks.json") + ".json" in objects
    for check in FAILING:
        assert check.encode() in objects[name]

    server.shutdown()
    server.server_close()
    s3_server.client().delete_object(Bucket=bucket, Key=f"manifests/{name}")
    offline = scrapy("checks", *places, "site")
    assert offline.returncode == 3, offline.stderr
    assert s3_server.objects(bucket, "manifests/")[name] == objects[name]
    unknown = scrapy("checks", *places, "elsewhere")
    assert unknown.returncode == 2 and "no manifest" in unknown.stderr
