"""Stops and lost results: prompt, and never without manifests.

Real ``scrapy crawl`` processes against a loopback server whose hit log has
server-side timestamps: after the first SIGINT no request starts; a second one
still writes the manifests, whose figures add up to the snapshots on disk; a
manifest directory or store that cannot be written stops the crawl before the
first request, and a manifest that cannot be written later is kept in a
fallback file and the exit status is 1.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env, wait_for
from tests.support.server import Reply, Server


def crawl(server: Server, tmp: Path, *extra: str, env: dict[str, str] | None = None):
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
         "-a", "source_id=stop", *crawl_args(tmp, server.origin), "-s", "LOGSTATS_INTERVAL=0",
         *extra],
        cwd=REPO, env=env or scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def only_manifest(tmp: Path) -> dict:
    (path,) = (tmp / "manifests").glob("*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_first_signal_sends_nothing_queued_behind_the_delay(server, tmp_path):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(5))
    server.site({"/": links, **{f"/p{i}": f"page {i}" for i in range(5)}})
    proc = crawl(server, tmp_path, "-s", "TRAVERSE_MIN_DELAY=20", "-s", "TRAVERSE_MAX_PAGES=6")
    wait_for(lambda: server.count("/") == 1 and server.hits[-1].path == "/", "the seed page")
    time.sleep(0.5)  # the five pages now wait in the origin's slot, 20 s apart
    signalled = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=15)  # not 20 s for the next page
    assert proc.returncode == 0, stderr[-2000:]
    assert [h.path for h in server.hits if h.start >= signalled] == []
    manifest = only_manifest(tmp_path)
    assert [p["url"] for p in manifest["pages"]] == [server.url("/")]
    assert manifest["warnings"][-1] == (
        "crawl stopped before this seed finished (shutdown); 1 page(s) recorded, "
        "0 fetched but waiting for an earlier page, 5 URL(s) discovered but not fetched"
    )


def test_first_signal_while_robots_txt_is_silent_fetches_no_page(server, tmp_path):
    server.site({"/robots.txt": Reply(body="", content_type="text/plain", delay=2.0), "/": "x"})
    proc = crawl(server, tmp_path, "-s", "DOWNLOAD_TIMEOUT=5")
    wait_for(lambda: "/robots.txt" in server.started, "the robots.txt request")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 0, stderr[-2000:]
    assert server.count("/") == 0  # robots.txt answered after the stop; the page never left
    manifest = only_manifest(tmp_path)
    assert manifest["pages"] == [] and manifest["truncated"] is True


def test_second_signal_still_writes_manifests_that_add_up(server, tmp_path):
    fast = {f"/f{i}": f"fast {i}" for i in range(3)}
    links = '<a href="/slow">slow</a>' + "".join(f'<a href="{p}">f</a>' for p in fast)
    server.site({"/": links, "/slow": Reply(body="slow", delay=60), **fast})
    proc = crawl(server, tmp_path, "-s", "DOWNLOAD_TIMEOUT=120", "-s", "RETRY_TIMES=0")
    store = tmp_path / "store"
    # The three fast pages are fetched and stored, but wait for /slow (earlier in BFS order).
    wait_for(lambda: len(list(store.rglob("*.json"))) == 4, "four snapshots")
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert proc.poll() is None  # the first signal lets the download in flight finish...
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)  # ...the second does not wait for it
    assert "Received SIGINT twice" in stderr, stderr[-2000:]
    manifest = only_manifest(tmp_path)
    assert [p["url"] for p in manifest["pages"]] == [server.url("/")]
    warning = manifest["warnings"][-1]
    assert warning == (
        "crawl stopped before this seed finished (shutdown); 1 page(s) recorded, "
        "3 fetched but waiting for an earlier page, 1 URL(s) discovered but not fetched"
    )
    recorded, waiting = (int(n) for n in re.findall(r"(\d+) (?:page|fetched)", warning))
    assert recorded + waiting == len(list(store.rglob("*.json")))


def read_only_directory(tmp: Path) -> str:
    """An empty directory that exists but cannot be written.

    Root writes through mode bits, so for root: an empty directory of the kernel's
    read-only filesystems (no file can be created in procfs or sysfs).
    """
    if os.geteuid() == 0:
        for candidate in (
            "/proc/sys/fs/binfmt_misc",
            "/sys/kernel/security",
            "/sys/kernel/tracing",
        ):
            if os.path.isdir(candidate) and not os.listdir(candidate):
                return candidate
        pytest.skip("no empty read-only directory for root")
    path = tmp / "read-only"
    path.mkdir()
    path.chmod(0o555)
    return str(path)


@pytest.mark.parametrize("setting", ["TRAVERSE_MANIFEST_DIR", "TRAVERSE_STORE", "JOBDIR"])
def test_an_unwritable_output_directory_stops_before_any_request(server, tmp_path, setting):
    server.site({"/": "x"})
    directory = read_only_directory(tmp_path)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}",
        *crawl_args(tmp_path, server.origin), "-s", f"{setting}={directory}",
    )  # fmt: skip
    assert run.returncode == 2
    assert f"error: {setting}: cannot write in '{directory}'" in run.stderr
    assert server.hits == []


@pytest.mark.parametrize("jobdir", [False, True])
def test_a_manifest_that_cannot_be_written_is_kept_and_the_exit_status_says_so(
    server, tmp_path, jobdir
):
    server.site({"/": '<a href="/late">late</a>', "/late": Reply(body="late", delay=1.0)})
    env = {**scrapy_env(), "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    extra = ("-s", f"JOBDIR={tmp_path / 'job'}") if jobdir else ()
    proc = crawl(server, tmp_path, *extra, env=env)
    wait_for(lambda: "/late" in server.started, "the second page (answered a second later)")
    manifests = tmp_path / "manifests"
    manifests.rmdir()
    manifests.write_text("a file where the manifest directory was")  # e.g. a disk swapped out
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr[-2000:]
    (line,) = [ln for ln in stderr.splitlines() if "its content is in" in ln]
    fallback = Path(line.rsplit("its content is in ", 1)[1])
    assert fallback.parent == (tmp_path / "job" if jobdir else tmp_path / "tmp")
    manifest = json.loads(fallback.read_text(encoding="utf-8"))
    assert [p["url"] for p in manifest["pages"]] == [server.url("/"), server.url("/late")]
    assert manifest["truncated"] is False
