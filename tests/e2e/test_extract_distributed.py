"""Extraction in a distributed crawl: two workers on a real redis-server write each
seed's items file once, equal to the single process's."""

from __future__ import annotations

import json
import subprocess
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
