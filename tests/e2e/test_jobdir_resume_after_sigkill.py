"""SIGKILL at 20 seeded random moments across a capture with JOBDIR.

Each kill lands somewhere in the capture — mid-download, mid-commit, mid-snapshot
or mid-manifest — and the next run resumes from what was durable. After the
last resume: the manifest equals an uninterrupted crawl's, no page is in it
twice, every snapshot file written before a kill parses, and what was fetched
again is bounded by what can be in flight when the process dies.
"""

from __future__ import annotations

import random
import signal
import time

from tests.support.jobdir_helpers import (
    PAGES,
    check_store,
    comparable,
    crawl_command,
    long_site,
    manifest,
    run,
    start,
    stop,
    wait_for_pages,
)
from traverse_crawl.jobdir.journal import FileJournal

KILLS = 20


def test_sigkill_at_random_moments_then_resume(server, tmp_path):
    long_site(server)
    done = run(crawl_command(server, tmp_path / "reference"))
    assert done.returncode == 0, done.stderr[-2000:]
    expected = comparable(manifest(tmp_path / "reference"))
    with server.lock:
        server.hits.clear()

    rng = random.Random(20261130)
    targets = sorted(rng.sample(range(1, PAGES), KILLS))
    command = crawl_command(server, tmp_path, "-s", f"JOBDIR={tmp_path / 'job'}")
    kills: list[float] = []  # when each kill was sent (the server's clock)
    kept: list[set[str]] = [set()]  # the pages kept in the JOBDIR before each run
    for target in targets:
        proc = start(command)
        wait_for_pages(server, proc, target)
        time.sleep(rng.uniform(0, 0.05))
        if proc.poll() is not None:
            stop(proc, signal.SIGKILL)
            break  # finished before this moment
        kills.append(time.monotonic())
        stop(proc, signal.SIGKILL)
        check_store(tmp_path / "store")
        journal = FileJournal(str(tmp_path / "job")).records()
        kept.append({r["u"].removeprefix(server.origin) for r in journal if r["t"] == "page"})
    assert len(kills) >= KILLS - 2, f"only {len(kills)} kills landed before the crawl finished"

    final = run(command[:5] + command[9:])  # the seed arguments left out
    assert final.returncode == 0, final.stderr[-2000:]
    found = manifest(tmp_path)
    assert len({page["url"] for page in found["pages"]}) == len(found["pages"])
    assert comparable(found) == expected
    assert check_store(tmp_path / "store") >= PAGES

    # Fetched again: only what a kill caught in flight (being downloaded, or
    # answered and not yet stored and kept); never a page kept before the run.
    with server.lock:
        hits = [h for h in server.hits if h.path not in ("/robots.txt", "/sitemap.xml")]
    assert {h.path for h in hits} == {p[1].removeprefix(server.origin) for p in expected["pages"]}
    for hit in hits:
        run_index = sum(1 for kill in kills if kill < hit.start)
        assert hit.path not in kept[run_index], f"{hit.path} was kept, then fetched again"
    refetched = len(hits) - len({h.path for h in hits})
    assert refetched < len(hits) // 2, refetched  # a crash costs the pages in flight only
