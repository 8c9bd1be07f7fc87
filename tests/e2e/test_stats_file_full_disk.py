"""A stats file lost to a disk that filled during the crawl is a lost output like any
other: an ERROR line naming the file and the cause, counted as lost, exit status 1, no
traceback (docs/monitoring.md, "Exit status")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_exit_status import command, site
from tests.support.cli import scrapy
from tests.support.server import Reply, Server
from tests.support.tmpfs import mounted_tmpfs


def fill(mount: Path) -> None:
    fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A mounted 64 KiB tmpfs, empty (mounting needs root: CI runs as root)."""
    with mounted_tmpfs(tmp_path / "disk", "64k") as mount:
        yield mount


def test_a_stats_file_lost_to_a_full_disk_is_exit_1(server: Server, tmp_path: Path, small_disk):
    site(server)

    def fills_the_disk(_request: object) -> Reply:
        fill(small_disk)  # after the start-up check, before the stats file is written
        return Reply(body="leaf")

    server.routes["/b"] = fills_the_disk
    stats_file = small_disk / "stats.json"
    args = command(server, tmp_path)
    args[args.index(f"TRAVERSE_STATS_FILE={tmp_path / 'out' / 'stats.json'}")] = (
        f"TRAVERSE_STATS_FILE={stats_file}"
    )
    run = scrapy(*args)
    assert server.count("/b") == 1
    assert run.returncode == 1, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if "] ERROR: " in line]
    (lost,) = [line for line in errors if "could not write the stats file" in line]
    assert str(stats_file) in lost and "No space left on device" in lost, lost
    assert any("1 result(s) could not be written for good: exit status 1" in e for e in errors)
    assert not stats_file.exists()
    # Everything else was kept: the manifest is whole.
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    assert len(json.loads(manifest.read_text(encoding="utf-8"))["pages"]) == 5
