"""A disk that fills after the start-up check (a real one: a 1 MiB tmpfs holding the
store, the manifest directory and the JOBDIR): the crawl ends with exit status 1, ERROR
lines naming the cause and no traceback; the manifest is kept in the temporary
directory's fallback file, and every snapshot written before the disk filled replays
(docs/monitoring.md, "Exit status"; docs/snapshots.md, "Write failures")."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import REPO, scrapy_env
from tests.support.server import Server
from tests.support.tmpfs import mounted_tmpfs
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

PAGES = 60
FILLER = "<p>" + "full disk " * 5_000 + "</p>"  # ~50 KB a page, ~100 KB of JSON


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A mounted 1 MiB tmpfs, empty (mounting needs root: CI runs as root)."""
    with mounted_tmpfs(tmp_path / "disk", "1m") as mount:
        yield mount


def crawl(server: Server, store: Path, manifests: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={server.url('/home.html')}", "-a", "source_id=full",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", "TRAVERSE_MAX_DEPTH=1", "-s", f"TRAVERSE_MAX_PAGES={PAGES + 1}",
        "-s", f"TRAVERSE_STORE={store}", "-s", f"TRAVERSE_MANIFEST_DIR={manifests}",
        "-s", "LOGSTATS_INTERVAL=0", *extra,
    ]  # fmt: skip


def test_a_disk_that_fills_mid_crawl_is_exit_1_and_loses_nothing_already_captured(
    server: Server, tmp_path: Path, small_disk: Path
) -> None:
    server.site({"/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(PAGES))})
    server.site({f"/p{i}.html": f"<h1>page {i}</h1>{FILLER}" for i in range(PAGES)})
    temporary = tmp_path / "tmp"  # where a manifest that fits nowhere else goes
    temporary.mkdir()
    env = {**scrapy_env(), "TMPDIR": str(temporary)}
    store = small_disk / "store"
    command = crawl(server, store, small_disk / "manifests", "-s", f"JOBDIR={small_disk / 'job'}")
    done = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)  # the tmpfs goes at the end of the test
    err = done.stderr
    assert done.returncode == 1, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    errors = [line for line in err.splitlines() if "] ERROR: " in line]
    # One line per thing that could not be kept (the store's first failure, the
    # journal, the manifest) and the exit status's own; never one a page.
    assert 2 <= len(errors) <= 5, errors
    full = [line for line in errors if "No space left on device" in line]
    assert any("snapshot store" in line for line in full), errors
    assert any("manifest" in line for line in full), errors

    # The manifest: not in its directory nor the JOBDIR (the disk is full), but in the
    # temporary directory, named in the ERROR line; every page is in it.
    assert list((small_disk / "manifests").glob("*.json")) == []
    (fallback,) = temporary.glob("manifest-full-*.json")
    assert str(fallback) in err
    manifest = json.loads(fallback.read_text(encoding="utf-8"))
    assert len(manifest["pages"]) == PAGES + 1
    failed = {
        w.split(": store.put failed", 1)[0].split("] ", 1)[1]
        for w in manifest["warnings"]
        if "store.put failed (No space left on device" in w
    }
    kept = {page["url"] for page in manifest["pages"]} - failed
    assert failed and kept, (len(failed), len(kept))
    on_disk = FilesystemSnapshotStore(str(copy))
    for page in manifest["pages"]:
        found = on_disk.get_by_source_ref(page["sourceRef"])
        assert (found is not None) == (page["url"] in kept), page["url"]

    # What was captured before the disk filled replays: the same sourceRefs, and the
    # pages that did not fit are no-snapshot.
    replay_dir = tmp_path / "replayed"
    replayed = subprocess.run(
        crawl(server, copy, replay_dir, "-s", "TRAVERSE_MODE=replay"),
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    (again,) = replay_dir.glob("*.json")
    pages = {page["url"]: page for page in json.loads(again.read_text(encoding="utf-8"))["pages"]}
    for page in manifest["pages"]:
        if page["url"] in kept and page["url"] in pages:
            assert pages[page["url"]].get("sourceRef") == page["sourceRef"], page["url"]
    assert any(page["url"] in kept for page in pages.values())
