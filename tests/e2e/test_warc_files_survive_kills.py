"""The WARC writer process: what a user sees when the crawl dies or the disk fails (CONTRACT §8)."""

from __future__ import annotations

import os
import time

import pytest_twisted

from tests.support.warctools import start_big_capture, warc_files, warcio_check, warcio_index


def test_sigkill_of_the_crawl_still_leaves_closed_valid_files(server, tmp_path):
    pages = 300
    proc, warc_dir = start_big_capture(server, tmp_path, pages)
    try:
        deadline = time.monotonic() + 60
        while not (warc_files(warc_dir) and list(warc_dir.glob("*.open"))):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "the capture never got going"
            time.sleep(0.01)
        proc.kill()  # no graceful shutdown: spider_closed never runs
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    # The writer process sees the pipe close, writes what it was handed and
    # renames its file.
    deadline = time.monotonic() + 60
    while list(warc_dir.glob("*.open")):
        assert time.monotonic() < deadline, "the writer left its file open"
        time.sleep(0.05)
    assert server.count("/home.html") == 1 and len(server.paths()) < pages + 2
    files = warc_files(warc_dir)
    assert len(files) >= 2
    for path in files:
        warcio_check(path)
    assert warcio_index(files[-1])[0]["warc-type"] == "warcinfo"


@pytest_twisted.ensureDeferred
async def test_a_failing_warc_disk_never_stops_the_capture(server, crawl, tmp_path, caplog):
    server.site({"/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(3))})
    server.site({f"/p{i}.html": f"<h1>{i}</h1>" for i in range(3)})
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the WARC directory should be")
    result = await crawl(
        settings={"TRAVERSE_WARC_DIR": str(blocker / "warc")},
        url=server.url("/home.html"),
        source_id="s",
    )
    (manifest,) = result.manifests()
    assert len(manifest["pages"]) == 4
    assert all("snapshot" in page["fetch"] for page in manifest["pages"])
    assert result.stats["warc/responses"] == 5  # robots.txt and the four pages
    assert result.stats["warc/write_failed"] >= 5
    assert "warc/records" not in result.stats
    assert any(
        "WARC write to" in r.getMessage() and "failed" in r.getMessage() for r in caplog.records
    )
    assert not (tmp_path / "not-a-directory" / "warc").exists()
    assert os.path.isfile(blocker)
