"""A snapshot writer process that stops answering mid-capture (stopped, or stuck on a
hung disk): after ``TRAVERSE_SNAPSHOT_STALL_TIMEOUT`` it is stopped, the snapshots it had
not answered are store warnings and counted as lost (exit status 1), and a graceful stop
ends instead of waiting for it for ever (docs/snapshots.md)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.support.cli import child_pid
from tests.support.server import Server
from tests.support.warctools import start_big_capture
from traverse_crawl.snapshots.store import FilesystemSnapshotStore


def snapshot_writer_pid(crawl_pid: int) -> int | None:
    return child_pid(crawl_pid, b"traverse_crawl.snapshots.writer_child")


def test_a_stalled_snapshot_writer_is_stopped_and_a_graceful_stop_ends(
    server: Server, tmp_path: Path
):
    pages = 1000
    proc, _ = start_big_capture(server, tmp_path, pages, "-s", "TRAVERSE_SNAPSHOT_STALL_TIMEOUT=3")
    stopped = None
    try:
        deadline = time.monotonic() + 60
        while (stopped := snapshot_writer_pid(proc.pid)) is None or len(server.hits) < 20:
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "timed out waiting for the capture to run"
            time.sleep(0.01)
        os.kill(stopped, signal.SIGSTOP)
        time.sleep(1)  # snapshots wait for the stopped writer
        os.kill(proc.pid, signal.SIGTERM)  # a graceful stop
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=90)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if stopped is not None:
            try:
                os.kill(stopped, signal.SIGKILL)
            except ProcessLookupError:
                pass
    text = stderr.decode()
    assert proc.returncode == 1, text[-3000:]
    assert took < 30, f"the stop took {took:.1f} s"
    assert "answered nothing for 3 s (TRAVERSE_SNAPSHOT_STALL_TIMEOUT)" in text, text[-3000:]
    assert "'traverse/lost'" in text
    (path,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    assert manifest["pages"]  # the pages recorded before the stop are kept
    # No page claims a snapshot the stopped writer never wrote: each page's sourceRef
    # resolves in the store, or the page carries the store warning (docs/snapshots.md).
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    failed = {
        w.split(": store.put failed", 1)[0].split("] ", 1)[1]
        for w in manifest["warnings"]
        if ": store.put failed (" in w
    }
    assert failed, "no page got the store warning"
    unresolved = [
        page["url"]
        for page in manifest["pages"]
        if "sourceRef" in page
        and page["url"] not in failed
        and store.get_by_source_ref(page["sourceRef"]) is None
    ]
    assert unresolved == [], (len(unresolved), len(manifest["pages"]))
    assert all("sourceRef" in page for page in manifest["pages"] if page["url"] in failed)
