"""The WARC writer process when it dies or stalls mid-capture (docs/web-archives.md,
"When the writer process fails"): a new one takes over, the crawl's loop never waits
on it, and what could not be written is counted as lost (exit status 1)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.support.cli import child_pid
from tests.support.server import Server
from tests.support.warctools import start_big_capture, warc_files, warcio_check, warcio_index


def writer_pid(crawl_pid: int) -> int | None:
    return child_pid(crawl_pid, b"traverse_crawl.warc.writer_child")


def wait_until(condition, what: str, proc, timeout: float = 60):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
    return found


def recorded_urls(warc_dir: Path) -> set[str]:
    """The response records' URLs of every closed file (each one valid)."""
    found = set()
    for path in warc_files(warc_dir):
        warcio_check(path)
        found |= {r["warc-target-uri"] for r in warcio_index(path) if r["warc-type"] == "response"}
    return found


def test_a_writer_that_dies_is_replaced_and_the_loss_is_counted(server: Server, tmp_path):
    proc, warc_dir = start_big_capture(server, tmp_path, 600)
    try:
        first = wait_until(lambda: writer_pid(proc.pid), "the writer process", proc)
        wait_until(lambda: warc_files(warc_dir), "a first WARC file", proc)
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: writer_pid(proc.pid) not in (None, first), "a new writer", proc)
        replaced_at = time.monotonic()
        _, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = stderr.decode()
    assert proc.returncode == 1, text[-3000:]
    errors = [line for line in text.splitlines() if "the WARC writer process" in line]
    assert any("ended (killed by SIGKILL)" in line and "ERROR" in line for line in errors), text
    # Every page fetched once the new writer was running has its response record.
    later = {server.url(h.path) for h in server.hits if h.start > replaced_at}
    assert later, "the capture ended before the new writer started"
    assert later <= recorded_urls(warc_dir)
    assert "'traverse/lost'" in text and "'warc/writer_restarts': 1" in text


@pytest.mark.parametrize("signals", [1, 2])
def test_a_stalled_writer_blocks_nothing_and_a_stop_still_ends(server: Server, tmp_path, signals):
    """With a second signal Scrapy stops the reactor while the spider closes: the
    reactor's shutdown still waits for the writer, with the same bound, and kills it."""
    pages = 1000
    proc, warc_dir = start_big_capture(
        server, tmp_path, pages, "-s", "TRAVERSE_WARC_STALL_TIMEOUT=3"
    )
    stopped = None
    try:
        stopped = wait_until(lambda: writer_pid(proc.pid), "the writer process", proc)
        wait_until(lambda: warc_files(warc_dir), "a first WARC file", proc)
        os.kill(stopped, signal.SIGSTOP)
        time.sleep(1.5 if signals == 1 else 0.5)  # records pile up for the stopped writer
        os.kill(proc.pid, signal.SIGTERM)  # handled: the loop is not blocked
        if signals == 2:
            time.sleep(0.5)
            os.kill(proc.pid, signal.SIGTERM)  # the second: the manifests, then out
        started = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
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
    assert len(server.hits) < pages  # stopped mid-capture
    if signals == 1:
        stalled = "the WARC writer process answered nothing for 3 s (TRAVERSE_WARC_STALL_TIMEOUT)"
        assert stalled in text or "killed" in text, text
        assert "'traverse/lost'" in text
    else:  # the stats were written already: the ERROR line says what was lost
        killed = [line for line in text.splitlines() if "the WARC writer process" in line]
        assert any("ERROR" in line and "killed" in line for line in killed), text[-3000:]
    assert (
        not os.path.exists(f"/proc/{stopped}/stat")
        or b"Z" in open(f"/proc/{stopped}/stat", "rb").read().rsplit(b")", 1)[1][:3]
    )
