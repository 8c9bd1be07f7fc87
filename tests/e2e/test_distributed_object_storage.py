"""Workers that share no filesystem: Redis for the crawl, an S3 bucket for its bytes.

Two worker processes, each in a working directory of its own, with the store and
the manifest directory in a bucket (moto's server mode), make the single-process
crawl's manifests (written once each, from the bucket).
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import threading
import time

import pytest

from tests.support.cli import REPO, scrapy_env
from tests.support.distributed_site import (
    command,
    expected,  # noqa: F401  (fixture)
    finish,
    site_servers,  # noqa: F401  (fixture)
    sites,  # noqa: F401  (fixture)
    wait_for_hits,
    wait_for_worker,
)
from tests.support.jobdir_helpers import comparable, stop
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.support.s3server import Relay
from traverse_crawl.snapshots.store import open_snapshot_store

pytestmark = [pytest.mark.redis, pytest.mark.s3]


def test_two_workers_with_no_shared_path_make_the_single_process_manifests(
    sites,  # noqa: F811
    expected,  # noqa: F811
    redis_server,  # noqa: F811
    s3_server,
    tmp_path,
):
    bucket = s3_server.new_bucket()
    into_bucket = [
        "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
        "-s", "TRAVERSE_LEASE_TIMEOUT=60", *s3_server.setting_args(),
    ]  # fmt: skip
    env = {**scrapy_env(), "SCRAPY_SETTINGS_MODULE": "traverse_crawl.settings"}  # no scrapy.cfg
    procs = []
    for name, seeds in (("a", True), ("b", False)):
        home = tmp_path / name
        home.mkdir()
        cmd = command(home, sites, redis_server.url, *into_bucket, seeds=seeds)
        procs.append(subprocess.Popen(cmd, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))  # fmt: skip
    results = finish(procs)
    for status, err in results:
        assert status == 0, err[-3000:]
    assert any("every manifest written" in err for _, err in results)
    written = s3_server.objects(bucket, "manifests/")
    found = {name: comparable(json.loads(data)) for name, data in sorted(written.items())}
    assert found == expected
    stored = s3_server.objects(bucket, "store/")
    pages = sum(len(m["pages"]) for m in found.values())
    assert len(stored) == pages  # one snapshot per page (every page is a 200 here)
    for home in (tmp_path / "a", tmp_path / "b"):  # nothing was written where they ran
        assert sorted(os.listdir(home)) == (["seeds.txt"] if home.name == "a" else [])
    assert not (REPO / "s3:").exists()


def test_a_sigkilled_worker_with_a_bucket_store_loses_nothing(
    sites,  # noqa: F811
    expected,  # noqa: F811
    redis_server,  # noqa: F811
    s3_server,
    tmp_path,
):
    # Versioning on: the bucket keeps every write of a key, so "written once" can be seen.
    bucket = s3_server.new_bucket()
    client = s3_server.client()
    client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    into_bucket = [
        "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
    ]  # fmt: skip
    env = {**scrapy_env(), "SCRAPY_SETTINGS_MODULE": "traverse_crawl.settings"}  # no scrapy.cfg
    # The worker to be killed reaches the bucket through a relay that holds each snapshot
    # PUT a while: when it is killed, it has pages fetched whose PUTs are in flight.
    held = threading.Semaphore(0)

    def slow_puts(data: bytes) -> None:
        if data.startswith(f"PUT /{bucket}/store/".encode()):
            held.release()
            time.sleep(0.3)

    relay = Relay(s3_server.port, slow_puts)
    relay.start()

    def worker(name: str, seeds: bool, endpoint: str | None = None) -> subprocess.Popen[str]:
        home = tmp_path / name
        home.mkdir()
        aws = s3_server.setting_args(endpoint)
        cmd = command(home, sites, redis_server.url, *into_bucket, *aws, seeds=seeds)
        return subprocess.Popen(cmd, cwd=home, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip

    first, second = worker("a", True), worker("b", False, relay.endpoint)
    try:
        wait_for_worker(redis_server.url, second)
        wait_for_hits(sites, 120, [first, second])  # both are fetching, some pages are recorded
        for _ in range(10):  # and the second has PUTs held
            assert held.acquire(timeout=60), "the second worker never stored a page"
        stop(second, signal.SIGKILL)
    finally:
        relay.stop()
    results = finish([first, worker("c", False)])
    for status, err in results:
        assert status == 0, err[-3000:]
    assert any("every manifest written" in err for _, err in results)
    written = s3_server.objects(bucket, "manifests/")
    found = {name: comparable(json.loads(data)) for name, data in sorted(written.items())}
    assert found == expected
    versions: collections.Counter[str] = collections.Counter()
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket):
        versions.update(entry["Key"] for entry in page.get("Versions", []))
    assert {key: versions[key] for key in versions if key.startswith("manifests/")} == {
        f"manifests/{name}": 1 for name in written
    }
    store = open_snapshot_store(f"s3://{bucket}/store", s3_server.settings())
    for name, data in written.items():
        for page in json.loads(data)["pages"]:
            snapshot = store.get_by_source_ref(page["sourceRef"])
            assert snapshot is not None, (name, page["url"])
            assert snapshot["bodyHash"] == page["fetch"]["snapshot"]["bodyHash"]
    for home in ("a", "b", "c"):  # nothing was written where they ran
        assert sorted(os.listdir(tmp_path / home)) == (["seeds.txt"] if home == "a" else [])
