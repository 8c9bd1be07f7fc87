"""Checks in a distributed crawl: two workers on a real redis-server; the worker that
writes a seed's manifest runs its checks once, and exits 3 for a failing one; the
results are those ``scrapy checks`` gives from the same files."""

from __future__ import annotations

import pytest

from tests.support.cli import scrapy
from tests.support.distributed_site import (
    ORIGINS,
    clear,
    command,
    finish,
    site_servers,  # noqa: F401  (fixture)
    start,
)
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.redis

RULES = """
[[types]]
name = "page"
[types.fields]
heading = "css:h1::text"
"""
CHECKS = """
[crawl]
min_pages = 1
[items.page]
min_items = 1000
"""


def test_the_worker_that_writes_a_manifest_checks_its_seed_once(
    site_servers,  # noqa: F811
    redis_server,  # noqa: F811
    tmp_path,
):
    clear(site_servers)
    (tmp_path / "extract.toml").write_text(RULES, encoding="utf-8")
    (tmp_path / "checks.toml").write_text(CHECKS, encoding="utf-8")
    shared = tmp_path / "shared"
    more = [
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_CHECKS={tmp_path / 'checks.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={shared / 'items'}", "-s", "TRAVERSE_LEASE_TIMEOUT=60",
    ]  # fmt: skip
    first = start(command(shared, site_servers, redis_server.url, *more))
    joiner = start(command(shared, site_servers, redis_server.url, *more, seeds=False))
    results = finish([first, joiner])
    checked = [err.count("checks for seed") for _, err in results]
    assert sum(checked) == ORIGINS  # each seed's checks once
    for (status, err), count in zip(results, checked, strict=True):
        assert status == (3 if count else 0), err[-3000:]
    files = sorted((shared / "manifests").glob("*.checks.json"))
    assert len(files) == ORIGINS
    written = {path.name: path.read_bytes() for path in files}
    offline = scrapy(
        "checks", "-s", f"TRAVERSE_CHECKS={tmp_path / 'checks.toml'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={shared / 'manifests'}",
        "-s", f"TRAVERSE_ITEMS_DIR={shared / 'items'}",
    )  # fmt: skip
    assert offline.returncode == 3, offline.stderr
    assert {path.name: path.read_bytes() for path in files} == written
    assert offline.stdout.count("items.page.min_items") == ORIGINS
