"""The cost of JOBDIR, and the time to resume a large crawl's state.

    .venv/bin/python bench/jobdir.py cost      # 2,000-page site: pages/s with and without JOBDIR
    .venv/bin/python bench/jobdir.py resume    # a 20,000-page crawl's journal: time to resume it
    .venv/bin/python bench/jobdir.py all

What it measures and how: the comment above ``main``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.run import RESULTS, Bench, environment, line, python, summary  # noqa: E402
from bench.site import DEFAULT_PAGE_BYTES, DEFAULT_PAGES, DEFAULT_SEED  # noqa: E402
from traverse_crawl.config.settings import TraverseConfig  # noqa: E402
from traverse_crawl.crawl.frontier import Frontier, Outcome  # noqa: E402
from traverse_crawl.crawl.seeds import Seed  # noqa: E402
from traverse_crawl.jobdir import state as jobstate  # noqa: E402
from traverse_crawl.jobdir.journal import FileJournal  # noqa: E402
from traverse_crawl.jobdir.pipeline import open_job  # noqa: E402

TARGET_COST_RATIO = 0.85  # pages/s with JOBDIR >= 0.85x without
TARGET_RESUME_S = 2.0  # resume a 20,000-page crawl's state in under 2 s


def bench_cost(args: argparse.Namespace) -> dict[str, Any]:
    bench = Bench(args)
    out: dict[str, Any] = {"site": bench.site.to_dict()}
    try:
        bench.start_server()
        for mode in ("live", "capture"):
            runs: dict[str, list[Any]] = {"without": [], "with": []}
            for i in range(args.warmup + args.runs):
                for variant in ("without", "with"):
                    label = f"{mode}-{variant}-{i}"
                    jobdir = bench.scratch / f"job-{label}"
                    bench.args.set = [f"JOBDIR={jobdir}"] if variant == "with" else []
                    run = bench.traverse(label, mode=mode)
                    if i >= args.warmup:
                        runs[variant].append(run)
            bench.args.set = []
            without, with_ = summary(runs["without"]), summary(runs["with"])
            ratio = with_["pages_per_s"] / without["pages_per_s"] if without["pages_per_s"] else 0
            print(line(f"{mode}, no JOBDIR", without))
            print(line(f"{mode}, JOBDIR", with_))
            print(f"  {mode}: JOBDIR/none = {ratio:.2f}x (target >= {TARGET_COST_RATIO}x)")
            out[mode] = {"without": without, "with": with_, "ratio": round(ratio, 3)}
    finally:
        bench.close()
    return out


def synthetic_journal(directory: Path, pages: int, links: int, seed: int) -> tuple[str, int]:
    """A finished crawl of ``pages`` pages, kept by the real journal; returns the seed URL."""
    rng = random.Random(seed)
    origin = "http://127.0.0.1:9"
    url = f"{origin}/"
    journal = FileJournal(str(directory))
    journal.append(
        jobstate.header([Seed("big", url)], "live", str(directory / "store"),
                        jobstate.Budgets(pages, 50))
    )  # fmt: skip
    frontier = Frontier("big", url, pages, 50, "live")
    todo = frontier.admit()
    kept = 0
    while todo:
        adm = todo.pop(rng.randrange(len(todo)) if len(todo) > 1 else 0)
        found = [f"{origin}/p{rng.randrange(pages * 3)}" for _ in range(links)]
        snapshot = {
            "sourceId": adm.page_id, "url": adm.url, "fetchedAt": "2026-11-30T12:00:00.000Z",
            "status": 200, "contentType": "html", "bodyHash": "0" * 64,
        }  # fmt: skip
        outcome = Outcome({"snapshot": snapshot}, links=found)
        journal.append(jobstate.page_record(0, adm.index, (adm.url, adm.depth), outcome, None))
        kept += 1
        _, more = frontier.record(adm.index, outcome)
        todo.extend(more)
    journal.close()
    return url, kept


def bench_resume(args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="traverse-bench-resume-"))
    job = scratch / "job"
    job.mkdir()
    url, kept = synthetic_journal(job, args.resume_pages, 10, args.seed)
    size = (job / "traverse-journal.jsonl").stat().st_size
    print(f"journal: {kept} pages, {size / 1e6:.1f} MB")
    config = TraverseConfig.from_settings(
        {"TRAVERSE_MODE": "live", "TRAVERSE_STORE": str(job / "store"),
         "TRAVERSE_MAX_PAGES": args.resume_pages, "TRAVERSE_MAX_DEPTH": 50}
    )  # fmt: skip
    in_process, in_process_cpu = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        opened = open_job(str(job), config, None)
        frontier = Frontier("big", url, config.max_pages, config.max_depth, "live")
        frontier.admit()
        jobstate.replay({0: frontier}, opened.records)
        in_process.append(time.perf_counter() - t0)
        in_process_cpu.append(time.process_time() - c0)
        assert frontier.finished and len(frontier.pages) == kept
    command = [
        python(), "-m", "scrapy", "crawl", "traverse",
        "-s", f"JOBDIR={job}", "-s", "TRAVERSE_MODE=live",
        "-s", f"TRAVERSE_STORE={job / 'store'}", "-s", f"TRAVERSE_MANIFEST_DIR={scratch / 'm'}",
        "-s", f"TRAVERSE_MAX_PAGES={args.resume_pages}", "-s", "TRAVERSE_MAX_DEPTH=50",
        "-s", "LOG_LEVEL=WARNING",
    ]  # fmt: skip
    process = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
        process.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr[-2000:]
    state_s, process_s = statistics.median(in_process), statistics.median(process)
    state_cpu = statistics.median(in_process_cpu)
    print(
        f"  resume state (open_job + replay), {kept} pages: {state_s:.2f} s wall, "
        f"{state_cpu:.2f} s CPU (runs {[round(x, 2) for x in in_process]}; "
        f"target < {TARGET_RESUME_S} s)"
    )
    print(
        f"  scrapy crawl resuming the finished crawl, end to end: {process_s:.2f} s "
        f"(runs {[round(x, 2) for x in process]})"
    )
    return {
        "pages": kept,
        "journal_bytes": size,
        "state_s": round(state_s, 3),
        "state_s_all": [round(x, 3) for x in in_process],
        "state_cpu_s": round(state_cpu, 3),
        "process_s": round(process_s, 3),
        "process_s_all": [round(x, 3) for x in process],
    }


# ``cost``: the bench site of ``bench/site.py`` behind nginx (as ``bench/run.py``),
# ``scrapy crawl traverse`` in ``live`` and ``capture`` mode, each with and without
# a fresh ``JOBDIR``, interleaved, ``--runs`` measured runs after ``--warmup``;
# medians of pages/s over Scrapy's ``elapsed_time_seconds``.
#
# ``resume``: a journal of a finished 20,000-page crawl (a synthetic link graph,
# ten same-origin links per page, records written by the real ``FileJournal``),
# then (a) in-process: ``open_job`` (read, checksum, parse, checks) plus
# ``replay`` into a frontier — the state part of a resume; (b) end to end: the
# ``scrapy crawl`` process that resumes the finished crawl, sends nothing and
# writes the manifest (interpreter start-up and Scrapy's included).
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["cost", "resume", "all"])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--page-bytes", type=int, default=DEFAULT_PAGE_BYTES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--resume-pages", type=int, default=20_000)
    parser.add_argument("--site-dir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    args.set, args.plain_set = [], []
    result: dict[str, Any] = {"command": f"jobdir {args.what}", "environment": environment()}
    if args.what in ("cost", "all"):
        result["cost"] = bench_cost(args)
    if args.what in ("resume", "all"):
        result["resume"] = bench_resume(args)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"jobdir-{args.what}-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
