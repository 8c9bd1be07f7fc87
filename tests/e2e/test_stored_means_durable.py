"""Group commit in real ``scrapy crawl`` runs: a page is reported stored (to the JOBDIR
journal, to the manifest) only once its file is durable, whatever kills the crawl or its
writer process, and a full disk costs exactly the pages that did not fit.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.jobdir_helpers import PAGES, crawl_command, long_site, manifest, run, start, stop
from tests.support.server import Server
from tests.unit.snapshots.test_batch_write import leftovers
from traverse_crawl.jobdir.journal import FileJournal
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, deserialize


def _path(store: Path, ref: str) -> str:
    """Where the store keeps the snapshot that a page's ``sourceRef`` names."""
    parsed = parse_source_ref(ref)
    assert parsed is not None
    return FilesystemSnapshotStore(str(store)).path(
        {"sourceId": parsed.source_id, "fetchedAt": parsed.fetched_at, "bodyHash": parsed.body_hash}
    )


def _on_disk(store: Path, ref: str) -> dict[str, Any] | None:
    path = _path(store, ref)
    if not os.path.exists(path):
        return None
    snapshot = deserialize(Path(path).read_text(encoding="utf-8"))
    assert snapshot is not None, f"{path} is torn"
    parsed = parse_source_ref(ref)
    assert parsed is not None and snapshot["bodyHash"] == parsed.body_hash
    return snapshot


def test_sigkill_during_batches_leaves_no_claim_without_its_file(
    server: Server, tmp_path: Path
) -> None:
    """Killed at seeded moments while batches are written: every page the JOBDIR
    journal kept as stored has its snapshot file, whole; so does the manifest's."""
    long_site(server)
    store = tmp_path / "store"
    command = crawl_command(server, tmp_path, "-s", f"JOBDIR={tmp_path / 'job'}")
    rng = random.Random(1711)
    claims_checked = 0
    for target in sorted(rng.sample(range(20, 280), 6)):
        proc = start(command)
        deadline = time.monotonic() + 60
        while proc.poll() is None and len(list(store.rglob("*.json"))) < target:
            assert time.monotonic() < deadline, "the capture never got going"
            time.sleep(0.002)
        time.sleep(rng.uniform(0, 0.03))
        stop(proc, signal.SIGKILL)
        for record in FileJournal(str(tmp_path / "job")).records():
            if record["t"] == "page" and "ref" in record and "store" not in record:
                assert _on_disk(store, record["ref"]) is not None, record["u"]
                claims_checked += 1
    assert claims_checked > 0

    final = stop_after(start(command[:5] + command[9:]))  # resumed from the JOBDIR
    assert final == 0
    pages = manifest(tmp_path)["pages"]
    assert all(_on_disk(store, page["sourceRef"]) is not None for page in pages)


def stop_after(proc: subprocess.Popen[str]) -> int:
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    return proc.returncode


def _stored_others(found: dict[str, Any], reason: str) -> set[str]:
    """The URLs of the pages without the store warning for ``reason``; some pages
    must carry it, and some not."""
    failed = {
        w.split(": store.put failed", 1)[0].split("] ", 1)[1]
        for w in found["warnings"]
        if f"store.put failed ({reason}" in w
    }
    stored = {page["url"] for page in found["pages"]} - failed
    assert failed and stored, (len(failed), len(stored))
    return stored


FULL_PAGES = 60
FILLER = "<p>" + "full disk " * 5_000 + "</p>"  # ~50 KB a page, ~100 KB of JSON


def _can_mount_tmpfs(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {probe}"],
        capture_output=True,
        check=False,
    )
    probe.rmdir()
    return done.returncode == 0


def test_a_full_disk_fails_exactly_the_pages_that_did_not_fit(
    server: Server, tmp_path: Path
) -> None:
    """A real full disk: the store on a 1 MiB tmpfs, mounted in a private mount
    namespace. Pages whose file did not fit get the store warning; every other
    page's snapshot is on disk and whole, those captured before included."""
    if not _can_mount_tmpfs(tmp_path):
        pytest.skip("cannot mount a tmpfs in a private mount namespace (needs root)")
    links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(FULL_PAGES))
    server.site({"/home.html": links})
    server.site({f"/p{i}.html": f"<h1>page {i}</h1>{FILLER}" for i in range(FULL_PAGES)})
    store, copy = tmp_path / "store", tmp_path / "copy"
    store.mkdir()
    crawl = [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={server.url('/home.html')}", "-a", "source_id=full",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}",
        "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", "TRAVERSE_MAX_DEPTH=1",
        "-s", f"TRAVERSE_MAX_PAGES={FULL_PAGES + 1}",
        "-s", f"TRAVERSE_STORE={store}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
    ]  # fmt: skip
    script = (
        f'mount -t tmpfs -o size=1m tmpfs "{store}" || exit 99\n'
        '"$@"; rc=$?\n'
        f'cp -a "{store}" "{copy}"\n'  # the tmpfs goes with the namespace
        "exit $rc\n"
    )
    done = run(["unshare", "-m", "sh", "-c", script, "sh", *crawl], timeout=180)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    found = manifest(tmp_path)
    stored = _stored_others(found, "No space left on device")
    for page in found["pages"]:
        on_disk = _on_disk(copy, page["sourceRef"])
        assert (on_disk is not None) == (page["url"] in stored), page["url"]
    assert leftovers(copy) == []
    assert "snapshot/store_failed" in done.stderr
    stats = json.dumps(found["warnings"])
    assert "page fetch result kept, snapshot not persisted" in stats


def _writer_child(crawl: int) -> int | None:
    """The pid of the crawl's snapshot writer process, if it has one yet."""
    for task in Path(f"/proc/{crawl}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"traverse_crawl.snapshots.writer_child" in cmdline:
                return int(child)
    return None


def _capture_under_way(server: Server, tmp_path: Path) -> tuple[subprocess.Popen[str], Path, int]:
    """A capture of the long site, 40 files on disk: the crawl, its store, its writer's pid."""
    long_site(server)
    store = tmp_path / "store"
    proc = start(crawl_command(server, tmp_path))
    try:
        deadline = time.monotonic() + 60
        while proc.poll() is None and len(list(store.rglob("*.json"))) < 40:
            assert time.monotonic() < deadline, "the capture never got going"
            time.sleep(0.002)
        child = _writer_child(proc.pid)
        assert child is not None, "no snapshot writer process under the crawl"
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    return proc, store, child


def test_a_killed_writer_process_costs_pages_their_snapshot_not_the_crawl(
    server: Server, tmp_path: Path
) -> None:
    """The writer child SIGKILLed mid-crawl: the crawl goes on to the end, and exits 1
    since snapshots were lost; every page either has its snapshot file, whole, or
    carries the store warning naming the writer's death — none is claimed without its
    file."""
    proc, store, child = _capture_under_way(server, tmp_path)
    os.kill(child, signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err[-3000:]
    found = manifest(tmp_path)
    assert len(found["pages"]) == PAGES  # the crawl went on to the end
    stored = _stored_others(found, "the snapshot writer process ended (killed by SIGKILL)")
    for page in found["pages"]:
        if page["url"] in stored:
            assert _on_disk(store, page["sourceRef"]) is not None, page["url"]
    assert "snapshot/store_failed" in err


def test_a_second_signal_with_the_writer_stalled_claims_no_file_it_has_not_written(
    server: Server, tmp_path: Path
) -> None:
    """The writer child stopped (SIGSTOP: a hung disk) while pages wait for their
    files, then two SIGINTs: after the pipelines' grace the crawl writes its
    manifest and exits; the pages whose files were still owed carry the warning
    naming the stop, and every other page's file was on disk when it exited."""
    proc, store, child = _capture_under_way(server, tmp_path)
    try:
        os.kill(child, signal.SIGSTOP)
        time.sleep(0.5)  # responses keep coming: their pages wait for files
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)  # the grace is 10 s
        on_disk_at_exit = {str(path) for path in store.rglob("*.json")}
    finally:
        os.kill(child, signal.SIGCONT)  # it writes what it was given, sees EOF, exits
        if proc.poll() is None:
            proc.kill()
    _, err = proc.communicate(timeout=60)  # EOF once the writer, which shares stderr, is gone
    assert "Received SIGINT twice" in err, err[-3000:]
    found = manifest(tmp_path)
    stored = _stored_others(found, "the crawl stopped (shutdown) before it was durable")
    for page in found["pages"]:
        if page["url"] in stored:
            assert _path(store, page["sourceRef"]) in on_disk_at_exit, page["url"]
