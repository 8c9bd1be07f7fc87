"""Pause and resume with JOBDIR, through ``scrapy crawl`` at a real loopback site."""

from __future__ import annotations

import collections
import signal

import pytest

from tests.support.jobdir_helpers import (
    PAGES,
    check_store,
    comparable,
    crawl_command,
    long_site,
    manifest,
    page_hits,
    run,
    start,
    stop,
    wait_for_pages,
)


def reference(server, tmp_path, *extra: str) -> dict:
    """The manifest of an uninterrupted crawl, without a JOBDIR; the hit log is reset."""
    done = run(crawl_command(server, tmp_path / "reference", *extra))
    assert done.returncode == 0, done.stderr[-2000:]
    with server.lock:
        server.hits.clear()
    return comparable(manifest(tmp_path / "reference"))


def test_sigint_at_several_points_then_resume_equals_an_uninterrupted_crawl(server, tmp_path):
    long_site(server)
    expected = reference(server, tmp_path)
    assert len(expected["pages"]) == PAGES
    jobdir = ["-s", f"JOBDIR={tmp_path / 'job'}"]
    for point in (1, 60, 170, 290):
        proc = start(crawl_command(server, tmp_path, *jobdir))
        wait_for_pages(server, proc, point)
        stop(proc, signal.SIGINT)
        assert proc.returncode == 0
        stopped = manifest(tmp_path)
        assert stopped["truncated"] is True
        assert stopped["warnings"][-1].startswith(
            "crawl stopped before this seed finished (shutdown); "
        )
    # The same command resumes; the seeds may be left out.
    done = run(crawl_command(server, tmp_path, *jobdir, seed=False))
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resumed with" in done.stderr
    assert comparable(manifest(tmp_path)) == expected
    # A graceful stop lets the downloads in flight finish and keeps them: no page twice.
    counts = collections.Counter(page_hits(server))
    assert [path for path, n in counts.items() if n > 1] == []
    assert len(counts) == PAGES
    check_store(tmp_path / "store")


def test_a_finished_crawl_resumed_sends_nothing_and_a_larger_budget_continues(server, tmp_path):
    long_site(server)
    larger = ("-s", "TRAVERSE_MAX_PAGES=200", "-s", "TRAVERSE_MAX_DEPTH=3")
    expected = reference(server, tmp_path, *larger)
    jobdir = ("-s", f"JOBDIR={tmp_path / 'job'}")
    small = ("-s", "TRAVERSE_MAX_PAGES=15", "-s", "TRAVERSE_MAX_DEPTH=1")
    first = run(crawl_command(server, tmp_path, *jobdir, *small))
    assert first.returncode == 0, first.stderr[-2000:]
    truncated = manifest(tmp_path)
    assert truncated["truncated"] is True and len(truncated["pages"]) == 15
    fetched = set(page_hits(server))
    # Finished, same budgets: no request at all, exit 0, the same manifest.
    with server.lock:
        server.hits.clear()
    again = run(crawl_command(server, tmp_path, *jobdir, *small, seed=False))
    assert again.returncode == 0, again.stderr[-2000:]
    assert server.hits == []
    assert comparable(manifest(tmp_path)) == comparable(truncated)
    # Larger budgets: on to what a fresh crawl with them records; nothing fetched twice.
    more = run(crawl_command(server, tmp_path, *jobdir, *larger))
    assert more.returncode == 0, more.stderr[-2000:]
    assert comparable(manifest(tmp_path)) == expected
    refetched = fetched & set(page_hits(server))
    assert refetched == set()


def test_sitemaps_survive_a_kill_and_a_stop(server, tmp_path):
    """Killed before or after the sitemaps were read, then stopped: the same crawl."""
    long_site(server, sitemap=True)
    sitemaps = ("-s", "TRAVERSE_SITEMAPS=robots", "-s", "TRAVERSE_MAX_PAGES=200")
    expected = reference(server, tmp_path, *sitemaps)
    assert any("/orphan" in page[1] for page in expected["pages"])
    command = crawl_command(server, tmp_path, "-s", f"JOBDIR={tmp_path / 'job'}", *sitemaps)
    for point, how in ((1, signal.SIGKILL), (60, signal.SIGKILL), (120, signal.SIGINT)):
        proc = start(command)
        wait_for_pages(server, proc, point)
        stop(proc, how)
    done = run(command)
    assert done.returncode == 0, done.stderr[-2000:]
    assert comparable(manifest(tmp_path)) == expected


def journal_bytes(jobdir) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(jobdir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("-a", "url=http://127.0.0.1:9/other"), "holds a crawl of other seeds"),
        (("-s", "TRAVERSE_MODE=live"), "TRAVERSE_MODE='capture', not 'live'"),
        (("-s", "TRAVERSE_STORE=elsewhere"), "TRAVERSE_STORE="),
        (("-s", "TRAVERSE_MAX_PAGES=3"), "a resume may raise it, not lower it to 3"),
        (("-s", "TRAVERSE_MAX_DEPTH=0"), "TRAVERSE_MAX_DEPTH=1"),
        ("damaged", "traverse-journal.jsonl record 1 is damaged"),
        ("foreign", "holds no traverse-journal.jsonl but other files (requests.queue"),
        ("unreadable", "traverse-journal.jsonl cannot be read"),
    ],
)
def test_refusals_exit_2_before_any_request_and_touch_nothing(server, tmp_path, change, message):
    long_site(server)
    job = tmp_path / "job"
    base = ("-s", f"JOBDIR={job}", "-s", "TRAVERSE_MAX_PAGES=5", "-s", "TRAVERSE_MAX_DEPTH=1")
    if change == "foreign":  # a plain Scrapy job's directory
        (job / "requests.queue").mkdir(parents=True)
        (job / "requests.queue" / "active.json").write_text("{}")
        (job / "requests.seen").write_text("")
    elif change == "unreadable":
        (job / "traverse-journal.jsonl").mkdir(parents=True)
    else:
        first = run(crawl_command(server, tmp_path, *base))
        assert first.returncode == 0, first.stderr[-2000:]
    if change == "damaged":
        path = job / "traverse-journal.jsonl"
        data = bytearray(path.read_bytes())
        data[20] ^= 0x01
        path.write_bytes(bytes(data))
    before = journal_bytes(job)
    with server.lock:
        server.hits.clear()
    extra = change if isinstance(change, tuple) else ()
    if extra[:1] == ("-a",):
        command = crawl_command(server, tmp_path, *base, seed=False) + list(extra)
    else:
        command = crawl_command(server, tmp_path, *base, *extra)
    refused = run(command)
    assert refused.returncode == 2, refused.stderr[-2000:]
    (line,) = [ln for ln in refused.stderr.splitlines() if "error:" in ln]
    assert "JOBDIR: " in line and message in line, line
    assert "Traceback" not in refused.stderr
    assert server.hits == []
    assert journal_bytes(job) == before


def test_a_second_crawl_on_a_jobdir_in_use_is_refused_and_the_first_goes_on(server, tmp_path):
    long_site(server)
    jobdir = ["-s", f"JOBDIR={tmp_path / 'job'}"]
    # Paced, so that the first is still crawling (and holding the JOBDIR) however long
    # the second takes to start on a loaded machine: unpaced, it could finish first.
    first = start(crawl_command(server, tmp_path, *jobdir, "-s", "TRAVERSE_MIN_DELAY=0.05"))
    try:
        wait_for_pages(server, first, 5)
        second = run(crawl_command(server, tmp_path / "second", *jobdir, seed=False))
        assert second.returncode == 2, second.stderr[-2000:]
        assert "JOBDIR" in second.stderr and "in use by another crawl" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        stop(first, signal.SIGINT)
    assert first.returncode == 0
    # The refused crawl fetched nothing and wrote nothing.
    assert not (tmp_path / "second" / "manifests").exists()
    # The lock went with the first process: the same JOBDIR resumes.
    done = run(crawl_command(server, tmp_path, *jobdir, seed=False))
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(manifest(tmp_path)["pages"]) == PAGES
