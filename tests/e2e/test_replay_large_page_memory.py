"""Replaying a large page costs a few times its size, not the size of its parse tree: a
page at the depth limit (no JOBDIR, no TRAVERSE_SKIPPED) is not parsed for links by the
replay reader process, a page whose links are read is read as a stream, and its file is
held once or twice at a time (docs/performance.md, "Replaying a large page")."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import REPO, child_pid, crawl_args, scrapy, scrapy_env
from tests.support.server import Reply, Server

READER = b"traverse_crawl.replay.reader_child"
UNIT = '<p>words of text <a href="/l{0}">link {0}</a> and more words</p>\n'


def peak_rss(pid: int) -> int:
    """``VmHWM`` of a live process, in bytes (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@pytest.mark.parametrize("depth", [0, 1], ids=["at-the-depth-limit", "links-read"])
def test_replaying_a_large_page_costs_a_few_times_its_size(
    server: Server, tmp_path: Path, depth: int
) -> None:
    body = "<html><body>" + "".join(UNIT.format(i % 50_000) for i in range(300_000))
    body += "</body></html>"
    size = len(body.encode())  # about 20 MB
    server.site({"/big.html": Reply(body=body)})
    common = [
        "crawl", "traverse", "-a", f"url={server.url('/big.html')}", "-a", "source_id=big",
        "-s", f"TRAVERSE_MAX_DEPTH={depth}", "-s", "TRAVERSE_MAX_PAGES=1",
        "-s", "DOWNLOAD_MAXSIZE=0",
        *crawl_args(tmp_path, server.origin),
    ]  # fmt: skip
    captured = scrapy(*common, timeout=120)
    assert captured.returncode == 0, captured.stderr[-3000:]
    (capture_manifest,) = (tmp_path / "manifests").glob("*.json")
    expected = json.loads(capture_manifest.read_text(encoding="utf-8"))
    capture_manifest.unlink()

    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", *common, "-s", "TRAVERSE_MODE=replay"],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    stderr: list[bytes] = []
    drain = threading.Thread(target=lambda: stderr.append(proc.stderr.read()))  # type: ignore[union-attr]
    drain.start()
    reader_peak = crawl_peak = 0
    reader: int | None = None
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None:
            assert time.monotonic() < deadline, "the replay did not end"
            crawl_peak = max(crawl_peak, peak_rss(proc.pid))
            reader = reader or child_pid(proc.pid, READER)
            if reader is not None:
                reader_peak = max(reader_peak, peak_rss(reader))
            time.sleep(0.002)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        drain.join()
        proc.stderr.close()  # type: ignore[union-attr]
    text = stderr[0].decode()
    assert proc.returncode == 0, text[-3000:]
    assert "replay reader process: 1 page(s) read ahead" in text, text[-3000:]
    assert reader_peak > 0, "the reader process was never seen"
    # Before: the reader built the page's whole parse tree, about 20 times its size (at
    # the depth limit too, where no link is read). Now about 3 times at the depth limit,
    # 7 where links are read (libxml2's push parser keeps its input), each with the
    # interpreter's own 30 MB; the crawl process about 4 times.
    assert reader_peak < 10 * size, (reader_peak, size)
    assert crawl_peak < 10 * size, (crawl_peak, size)
    (replay_manifest,) = (tmp_path / "manifests").glob("*.json")
    replayed = json.loads(replay_manifest.read_text(encoding="utf-8"))
    page, expected_page = replayed["pages"][0], expected["pages"][0]
    assert page["sourceRef"] == expected_page["sourceRef"]
    assert page["bodySize"] == expected_page["bodySize"] == size
    assert replayed["warnings"] == expected["warnings"]
