"""Both backends of ``Location`` behave alike, the bucket one against a real S3 server."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3server import Relay, S3Server
from traverse_crawl.errors import ConfigError
from traverse_crawl.storage import bucket as bucket_module
from traverse_crawl.storage.bucket import BucketError, BucketLocation
from traverse_crawl.storage.location import FilesystemLocation, Location, open_location

pytestmark = pytest.mark.s3


@pytest.fixture(params=["directory", "bucket"])
def location(request: pytest.FixtureRequest, tmp_path: Path, s3_server: S3Server) -> Location:
    if request.param == "directory":
        return FilesystemLocation(str(tmp_path / "root"))
    bucket = s3_server.new_bucket()
    return open_location("TRAVERSE_STORE", f"s3://{bucket}/shop/x", s3_server.settings())


def test_whole_objects_round_trip_and_list_like_a_directory(location: Location) -> None:
    assert location.read("a/b.json") is None
    location.write("a/b.json", b"{}")
    location.write("a/c.json", b"[1]")
    location.write("top.json", b"\x00\xff")
    assert location.read("a/b.json") == b"{}"
    assert location.read("top.json") == b"\x00\xff"
    assert location.names() == ["a", "top.json"]
    assert location.names("a") == ["b.json", "c.json"]
    assert location.names("missing") == []
    assert location.exists()
    location.delete("a/c.json")
    assert location.names("a") == ["b.json"]


def test_a_large_file_goes_up_in_parts_and_arrives_whole(
    s3_server: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bucket_module, "MULTIPART_SIZE", 5 * 1024 * 1024)  # S3's smallest part
    bucket = s3_server.new_bucket()
    location = open_location("TRAVERSE_WARC_DIR", f"s3://{bucket}/warc", s3_server.settings())
    data = os.urandom(11 * 1024 * 1024)
    local = tmp_path / "big.warc.gz"
    local.write_bytes(data)
    location.write_file("big.warc.gz", str(local))
    assert location.read("big.warc.gz") == data
    assert s3_server.objects(bucket, "warc/").keys() == {"big.warc.gz"}


def test_a_missing_bucket_or_endpoint_names_the_setting(s3_server: S3Server) -> None:
    missing = open_location("TRAVERSE_STORE", "s3://nope/x", s3_server.settings())
    assert isinstance(missing, BucketLocation)
    with pytest.raises(ConfigError, match=r"TRAVERSE_STORE.*'nope' does not exist"):
        missing.check("TRAVERSE_STORE")
    relay = Relay(s3_server.port)  # never started: nothing listens on its port
    away = open_location("TRAVERSE_MANIFEST_DIR", "s3://nope/x", s3_server.settings(relay.endpoint))
    assert isinstance(away, BucketLocation)
    with pytest.raises(ConfigError, match=r"TRAVERSE_MANIFEST_DIR.*cannot reach http://127"):
        away.check("TRAVERSE_MANIFEST_DIR")


def test_a_write_waits_for_the_endpoint_to_come_back(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    relay = Relay(s3_server.port)
    settings: dict[str, Any] = {**s3_server.settings(relay.endpoint), "TRAVERSE_S3_RETRY": 20}
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the endpoint comes back after the first failure
        slept.append(seconds)
        relay.start()

    location = BucketLocation(bucket, "p/", bucket_module.bucket_config("X", settings), sleep)
    location.write("k.json", b"body")
    assert len(slept) == 1
    assert s3_server.objects(bucket) == {"p/k.json": b"body"}
    relay.stop()
    config = bucket_module.bucket_config("X", {**settings, "TRAVERSE_S3_RETRY": 0})
    short = BucketLocation(bucket, "p/", config)
    with pytest.raises(BucketError, match=rf"write s3://{bucket}/p/k2.json"):
        short.write("k2.json", b"body")


def test_check_creates_a_directory_or_names_the_setting(tmp_path: Path) -> None:
    location = FilesystemLocation(str(tmp_path / "items" / "deep"))
    location.check("TRAVERSE_ITEMS_DIR")
    assert (tmp_path / "items" / "deep").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match=r"TRAVERSE_ITEMS_DIR: cannot create"):
        FilesystemLocation(str(tmp_path / "file" / "sub")).check("TRAVERSE_ITEMS_DIR")


def test_write_stream_puts_one_whole_object(location: Location) -> None:
    def write(handle: Any) -> None:
        for number in range(3):
            handle.write(b'{"n": %d}\n' % number)

    location.write_stream("seed.jsonl", write)
    assert location.read("seed.jsonl") == b'{"n": 0}\n{"n": 1}\n{"n": 2}\n'
