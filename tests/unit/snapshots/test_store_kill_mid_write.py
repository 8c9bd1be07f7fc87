"""A process killed while the store rewrites a snapshot (a 304's re-put), with the replacement
written but not yet renamed, leaves the previous file whole (``snapshots/store.py``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import REPO, scrapy_env
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, deserialize

WRITER = """
import sys
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.store import FilesystemSnapshotStore
store = FilesystemSnapshotStore(sys.argv[1])
snap = build_snapshot(source_id="page", url="http://h/", status=200, content_type="text",
                      raw_body=b"x" * (32 * 1024 * 1024), content_type_header="text/plain",
                      fetched_at="2026-07-02T00:00:00.000Z")
flagged = dict(snap, fromCache=True, notModified=True)
while True:  # a 304's re-put, forever: the same file name, rewritten
    store.put(snap)
    store.put(flagged)
"""


def test_kill_during_a_write_keeps_the_previous_file_whole(tmp_path):
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    directory = Path(store.directory("page"))
    for _attempt in range(10):
        for stale in directory.glob(".*.tmp") if directory.exists() else ():
            stale.unlink()
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, store.root], cwd=REPO, env=scrapy_env()
        )
        try:
            # Wait for a rewrite in progress: the snapshot exists and its
            # replacement is being written (written, fsynced, not yet renamed).
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and not (
                list(directory.glob("*.json")) and list(directory.glob(".*.tmp"))
            ):
                time.sleep(0.001)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        targets = list(directory.glob("*.json"))
        assert len(targets) <= 1  # never a second, torn snapshot file
        for target in targets:
            snapshot = deserialize(target.read_text(encoding="utf-8"))
            assert snapshot is not None and len(snapshot["body"]) == 32 * 1024 * 1024
        if targets and list(directory.glob(".*.tmp")):
            return  # killed before the rename: the replacement is lost, the snapshot whole
    raise AssertionError("never managed to kill the writer in the middle of a write")
