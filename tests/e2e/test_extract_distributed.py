"""Extraction in a distributed crawl: two workers on a real redis-server write each
seed's items file once, equal to the single process's."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, scrapy_env
from tests.support.distributed_site import (
    ORIGINS,
    command,
    expected,  # noqa: F401  (fixture)
    finish,
    site_servers,  # noqa: F401  (fixture)
    sites,  # noqa: F401  (fixture)
    start,
)
from tests.support.fault_proxy import FaultProxy
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.redis

RULES = """
[[types]]
name = "page"
[types.fields]
heading = "css:h1::text"
links = { selector = "css:a::attr(href)", many = true, url = true }
"""


def extraction(tmp: Path) -> list[str]:
    rules = tmp.parent / "extract.toml"
    rules.write_text(RULES, encoding="utf-8")
    return ["-s", f"TRAVERSE_EXTRACT={rules}", "-s", f"TRAVERSE_ITEMS_DIR={tmp / 'items'}"]


def items(tmp: Path) -> dict[str, list[dict[str, Any]]]:
    """Each items file's items, without the sourceRef (the fetch times differ)."""
    found = {}
    for path in sorted((tmp / "items").glob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_bytes().splitlines()]
        found[path.name] = [{k: v for k, v in i.items() if k != "sourceRef"} for i in lines]
    return found


def test_two_workers_write_the_single_process_items_files(sites, redis_server, tmp_path):  # noqa: F811
    alone = tmp_path / "alone"
    done = subprocess.run(
        command(alone, sites, None, *extraction(alone)), cwd=REPO, env=scrapy_env(),
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    reference = items(alone)
    assert len(reference) == ORIGINS and all(reference.values())

    shared = tmp_path / "shared"
    lease = ("-s", "TRAVERSE_LEASE_TIMEOUT=60")
    first = start(command(shared, sites, redis_server.url, *lease, *extraction(shared)))
    joiner = start(command(shared, sites, redis_server.url, *lease, *extraction(shared),
                           seeds=False))  # fmt: skip
    results = finish([first, joiner])
    for status, err in results:
        assert status == 0, err[-3000:]
    assert items(shared) == reference
    written = sum(err.count("items for seed") for _, err in results)
    assert written == ORIGINS  # each seed's file once, by the worker that wrote its manifest
    for path in (shared / "items").glob("*.jsonl"):
        manifest = json.loads((shared / "manifests" / path.name.replace(".jsonl", ".json"))
                              .read_text(encoding="utf-8"))  # fmt: skip
        refs = {p["url"]: p["sourceRef"] for p in manifest["pages"] if "sourceRef" in p}
        for line in path.read_bytes().splitlines():
            item = json.loads(line)
            assert item["sourceRef"] == refs[item["url"]]


@pytest.mark.s3
def test_an_items_file_one_worker_cannot_write_is_written_by_another(
    sites,  # noqa: F811
    redis_server,  # noqa: F811
    tmp_path,
    s3_server,
):
    """A worker whose items files cannot be written leaves each seed to another worker,
    which writes the items file and leaves the manifest, already there with the same
    bytes, as it is."""
    rules = tmp_path / "extract.toml"
    rules.write_text(RULES, encoding="utf-8")
    bucket = s3_server.new_bucket()
    extract = ["-s", f"TRAVERSE_EXTRACT={rules}", "-s", f"TRAVERSE_ITEMS_DIR=s3://{bucket}/items"]
    refusing = FaultProxy(
        s3_server.port,
        http=True,
        pick=lambda head: "error" if head.startswith(f"PUT /{bucket}/items/".encode()) else None,
    )
    refusing.start()
    shared = tmp_path / "shared"
    try:
        failing = ["-s", "TRAVERSE_S3_RETRY=0.2", *s3_server.setting_args(refusing.endpoint)]
        first = start(command(shared, sites, redis_server.url, *extract, *failing))
        manifests = shared / "manifests"
        deadline = time.monotonic() + 120
        while len(list(manifests.glob("*.json"))) < ORIGINS:
            assert first.poll() is None and time.monotonic() < deadline, (
                "the first worker's manifests"
            )
            time.sleep(0.2)
        inodes = {path.name: path.stat().st_ino for path in manifests.glob("*.json")}
        joiner = start(command(shared, sites, redis_server.url, *extract,
                               *s3_server.setting_args(), seeds=False))  # fmt: skip
        (first_status, first_err), (joiner_status, joiner_err) = finish([first, joiner])
    finally:
        refusing.stop()
    assert refusing.counts["error"] >= 1
    assert "its items file was not written; another worker will try" in first_err, first_err[-3000:]
    assert first_status == 1, first_err[-3000:]  # its own writes were lost, and it said so
    assert joiner_status == 0, joiner_err[-3000:]
    client = s3_server.client()
    names = [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix="items/")["Contents"]]
    assert sorted(names) == sorted(f"items/{name.replace('.json', '.jsonl')}" for name in inodes)
    # Each manifest is the file the first worker wrote: never written a second time.
    assert {p.name: p.stat().st_ino for p in manifests.glob("*.json")} == inodes
