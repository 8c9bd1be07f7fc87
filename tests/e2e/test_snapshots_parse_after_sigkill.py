"""A crash never leaves a snapshot file that does not parse.

``scrapy crawl traverse`` killed with SIGKILL in the middle of a large capture, then
replayed (a store rewrite killed mid-write: tests/unit/snapshots).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.cli import REPO, scrapy_env
from tests.support.server import Server
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.store import deserialize, source_dir_name

PAGES = 400
FILLER = "<p>" + "lorem ipsum dolor sit amet " * 4000 + "</p>"  # ~100 KB a page


def big_site(server: Server) -> None:
    links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(PAGES))
    server.site({"/home.html": links})
    server.site({f"/p{i}.html": f"<h1>page {i}</h1>{FILLER}" for i in range(PAGES)})


def crawl_command(server: Server, tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={server.url('/home.html')}", "-a", "source_id=big",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}",
        "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_MAX_PAGES={PAGES + 1}",
        "-s", "TRAVERSE_MAX_DEPTH=1",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
        *extra,
    ]  # fmt: skip


def env() -> dict[str, str]:
    return {**scrapy_env(), "SCRAPY_SETTINGS_MODULE": "traverse_crawl.settings"}


def children(pid: int) -> list[int]:
    """The process's children (Linux's /proc), e.g. the capture's snapshot writer."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def wait_gone(pids: list[int], timeout: float = 30) -> None:
    """Until none of ``pids`` runs (a zombie left to an init that does not reap counts as gone)."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while True:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (FileNotFoundError, ProcessLookupError, IndexError):
                break
            if state in ("Z", "X"):
                break
            assert time.monotonic() < deadline, f"process {pid} still runs"
            time.sleep(0.01)


def snapshot_files(store: Path) -> list[Path]:
    return sorted(store.rglob("*.json"))


def test_sigkill_mid_capture_leaves_only_parseable_snapshots(server, tmp_path):
    big_site(server)
    store = tmp_path / "store"
    proc = subprocess.Popen(
        crawl_command(server, tmp_path),
        cwd=REPO,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while len(snapshot_files(store)) < 40:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "the capture never got going"
            time.sleep(0.01)
        writers = children(proc.pid)  # the snapshot writer process
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        wait_gone(writers)  # it finishes the batch it was given, then sees EOF and exits
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL

    files = snapshot_files(store)
    assert 40 <= len(files) < PAGES + 1, "killed in the middle, not after the end"
    stored_ids = set()
    for path in files:
        text = path.read_text(encoding="utf-8")
        snapshot = deserialize(text)
        assert snapshot is not None, f"{path} does not parse"
        assert json.loads(text) is not None
        assert hashlib.sha256(snapshot["body"].encode()).hexdigest() == snapshot["bodyHash"]
        assert path.parent.name == source_dir_name(snapshot["sourceId"])
        stored_ids.add(snapshot["sourceId"])
    # Whatever else a crash leaves is a hidden temporary file, never a *.json.
    for leftover in store.rglob("*"):
        if leftover.is_file() and leftover.suffix != ".json":
            assert leftover.name.startswith(".") and leftover.name.endswith(".tmp")
    assert page_id("big", server.url("/home.html")) in stored_ids

    # A later replay, with the server gone, works from what was stored.
    server.shutdown()
    server.server_close()
    run = subprocess.run(
        crawl_command(server, tmp_path, "-s", "TRAVERSE_MODE=replay"),
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    manifest = json.loads((tmp_path / "manifests" / f"{source_dir_name('big')}.json").read_text())
    assert manifest["mode"] == "replay"
    assert len(manifest["pages"]) == PAGES + 1
    replayed = {p["id"] for p in manifest["pages"] if "snapshot" in p["fetch"]}
    assert replayed == stored_ids
    for page in manifest["pages"]:
        if page["id"] not in stored_ids:
            assert page["fetch"]["error"]["kind"] == "no-snapshot"
