"""The WARC writer process when ``scrapy crawl`` is killed (SIGKILL) or stopped (SIGTERM)
mid-capture: only closed files, each valid."""

from __future__ import annotations

import os
import signal
import time

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


def test_sigterm_mid_capture_leaves_only_closed_valid_files(server, tmp_path):
    pages = 300
    proc, warc_dir = start_big_capture(server, tmp_path, pages)
    try:
        deadline = time.monotonic() + 60
        while len(warc_files(warc_dir)) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "the capture never got going"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "shutdown" in stderr.decode().lower()
    assert server.count("/home.html") == 1 and len(server.paths()) < pages + 2
    assert not list(warc_dir.glob("*.open"))
    files = warc_files(warc_dir)
    assert len(files) >= 3
    for path in files:
        warcio_check(path)
