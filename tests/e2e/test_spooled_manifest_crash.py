"""A ``scrapy crawl`` killed while its pages wait in the spool leaves nothing in the manifest
directory that a later run takes for a manifest: the spool file never has a name there."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.jobdir_helpers import crawl_command, run, start, stop
from tests.support.server import Reply
from traverse_crawl.manifests.read import ManifestError, load_all


def spool_links(pid: int, directory: Path) -> list[str]:
    """The process's open files in ``directory`` (an unlinked one reads "... (deleted)")."""
    fds = Path(f"/proc/{pid}/fd")
    targets = []
    for fd in fds.iterdir():
        try:
            targets.append(os.readlink(fd))
        except OSError:
            continue
    return [t for t in targets if t.startswith(str(directory) + "/")]


def test_a_crash_leaves_nothing_that_a_later_run_takes_for_a_manifest(server, tmp_path):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(320))
    slow = {f"/p{i}": Reply(body=f"<p>page {i}</p>", delay=0.02) for i in range(320)}
    server.site({"/": links, **slow})
    manifests = (tmp_path / "manifests").resolve()
    command = crawl_command(server, tmp_path, "-s", "CONCURRENT_REQUESTS=4")
    proc = start(command)  # the pages spill every ~50 pages (32 KB)
    try:
        # Past the first spill (~50 pages), so the file seen is the spool, not the
        # directory's write probe at start (which has no name there either).
        deadline = time.monotonic() + 60
        while (len(server.paths()) < 80 or not spool_links(proc.pid, manifests)) and (
            proc.poll() is None
        ):
            assert time.monotonic() < deadline, "no spool file was ever opened"
            time.sleep(0.005)
        open_files = spool_links(proc.pid, manifests)
        assert open_files and all(t.endswith("(deleted)") for t in open_files), open_files
        assert os.listdir(manifests) == []  # the spool has no name in the directory
    finally:
        stop(proc, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert os.listdir(manifests) == []
    with pytest.raises(ManifestError, match="holds no manifest"):
        load_all([str(manifests)])
    done = run(command)
    assert done.returncode == 0, done.stderr[-2000:]
    (loaded,) = load_all([str(manifests)])
    assert len(loaded.data["pages"]) == 321
    assert os.listdir(manifests) == [Path(loaded.path).name]
