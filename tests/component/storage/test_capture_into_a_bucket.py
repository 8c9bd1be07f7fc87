"""Capture into an S3 bucket (a real one: moto's server mode), and replay from it.

The bucket holds the filesystem layout's keys with the same bytes, so a store
copied between a directory and a bucket is the same store (docs/object-storage.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.component.replay.test_offline_replay import pages_of, site
from tests.support.s3server import S3Server

pytestmark = pytest.mark.s3

STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d(?:[:-]|%3A)\d\d(?:[:-]|%3A)\d\d(?:\.\d+)?Z")


def directory_files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def without_times(files: dict[str, bytes]) -> dict[str, bytes]:
    """Each key and its bytes with every fetchedAt (in names, bodies and refs) blanked."""
    return {
        STAMP.sub("T", key): STAMP.sub("T", data.decode("utf-8")).encode("utf-8")
        for key, data in files.items()
    }


def bucket_settings(s3: S3Server, bucket: str, **more: Any) -> dict[str, Any]:
    return {
        **s3.settings(),
        "TRAVERSE_STORE": f"s3://{bucket}/shop/snapshots",
        "TRAVERSE_MANIFEST_DIR": f"s3://{bucket}/shop/manifests",
        **more,
    }


@pytest_twisted.ensureDeferred
async def test_a_capture_into_a_bucket_is_the_filesystem_capture_and_replays_offline(
    server, crawl, tmp_path, s3_server
):
    site(server)
    seed = server.url("/home.html")
    on_disk = await crawl(settings={"TRAVERSE_MAX_DEPTH": 3}, url=seed, source_id="s")
    assert on_disk.stats["snapshot/stored"] == 8

    bucket = s3_server.new_bucket()
    settings = bucket_settings(s3_server, bucket, TRAVERSE_MAX_DEPTH=3)
    into_bucket = await crawl(settings=settings, url=seed, source_id="s")
    assert into_bucket.stats["snapshot/stored"] == 8
    assert not (tmp_path / "store").joinpath("s3:").exists()  # nothing local for s3:// paths
    assert not Path("s3:").exists()

    stored = s3_server.objects(bucket, "shop/snapshots/")
    local = directory_files(tmp_path / "store")
    assert len(stored) == len(local) == 8
    # The same keys and the same bytes, the times of the fetches aside.
    assert without_times(stored) == without_times(local)
    assert all(STAMP.search(key) for key in stored)  # the times are there, in the names

    manifests = s3_server.objects(bucket, "shop/manifests/")
    assert list(manifests) == [p.name for p in sorted((tmp_path / "manifests").glob("*.json"))]
    assert without_times(manifests) == without_times(directory_files(tmp_path / "manifests"))
    captured = json.loads(next(iter(manifests.values())))
    assert captured["mode"] == "capture"

    hits = len(server.paths())
    server.shutdown()
    server.server_close()
    replay_settings = {**settings, "TRAVERSE_MODE": "replay"}
    replayed = await crawl(settings=replay_settings, url=seed, source_id="s")
    assert replayed.stats["replay/served"] == 8
    assert "replay/miss" not in replayed.stats
    assert len(server.paths()) == hits
    manifest = json.loads(next(iter(s3_server.objects(bucket, "shop/manifests/").values())))
    assert manifest["mode"] == "replay"
    assert pages_of(manifest) == pages_of(captured)
    assert manifest["warnings"] == captured["warnings"]
    for before, after in zip(captured["pages"], manifest["pages"], strict=True):
        assert after["fetch"]["snapshot"] == {**before["fetch"]["snapshot"], "fromCache": True}
    assert s3_server.objects(bucket, "shop/snapshots/") == stored  # replay writes nothing


@pytest_twisted.ensureDeferred
async def test_replay_reads_the_bucket_in_the_crawl_without_the_reader_process(
    server, crawl, s3_server
):
    site(server)
    seed = server.url("/home.html")
    bucket = s3_server.new_bucket()
    settings = bucket_settings(s3_server, bucket, TRAVERSE_MAX_DEPTH=3)
    await crawl(settings=settings, url=seed, source_id="s")
    captured = json.loads(next(iter(s3_server.objects(bucket, "shop/manifests/").values())))
    replay = {**settings, "TRAVERSE_MODE": "replay", "TRAVERSE_REPLAY_READER": False}
    replayed = await crawl(settings=replay, url=seed, source_id="s")
    assert replayed.stats["replay/served"] == 8
    manifest = json.loads(next(iter(s3_server.objects(bucket, "shop/manifests/").values())))
    assert pages_of(manifest) == pages_of(captured)


@pytest_twisted.ensureDeferred
async def test_replay_of_an_empty_prefix_is_one_invalid_config_page(server, crawl, s3_server):
    bucket = s3_server.new_bucket()
    settings = bucket_settings(s3_server, bucket, TRAVERSE_MODE="replay")
    await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    manifest = json.loads(next(iter(s3_server.objects(bucket, "shop/manifests/").values())))
    assert [p["fetch"]["error"]["kind"] for p in manifest["pages"]] == ["invalid-config"]
    assert server.paths() == []
