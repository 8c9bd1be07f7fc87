"""A 500-page crawl at concurrency 1: traverse_crawl against Traverse (TypeScript).

    .venv/bin/python bench/run.py vs-traverse [--runs 5] [--warmup 1]

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.run import Bench, Run, median, run_process, verdict  # noqa: E402
from bench.site import Nginx, generate  # noqa: E402

TARGET_RATIO = 1.2  # ours-c1 whole-process pages/s >= 1.2x traverse-ts's
PAGES = 500  # Traverse's crawl caps maxPages at 500 (MAX_CRAWL_PAGES)
PACKAGE = "@kontourai/traverse"
VERSION = "0.25.1"
# Traverse 0.25.1 declares @kontourai/forage ^0.5.0 (its fetch transport), of which
# the registry holds no version: the first one it has, 0.7.0, is pinned in its place.
FORAGE = "0.7.0"
INSTALL_DIR = REPO / "bench" / ".traverse-ts"  # ignored by git
SCRIPT = REPO / "bench" / "traverse_ts.mjs"


def install(directory: Path = INSTALL_DIR) -> Path:
    """Install Traverse under ``directory`` with npm, once; the directory."""
    installed = directory / "node_modules" / "@kontourai" / "traverse" / "package.json"
    if installed.exists() and json.loads(installed.read_text())["version"] == VERSION:
        return directory
    for program in ("node", "npm"):
        if shutil.which(program) is None:
            raise SystemExit(f"vs-traverse needs {program} on PATH (apt-get install -y nodejs npm)")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "package.json").write_text(
        json.dumps(
            {
                "name": "traverse-ts-bench",
                "private": True,
                "dependencies": {PACKAGE: VERSION},
                "overrides": {"@kontourai/forage": FORAGE},
            },
            indent=2,
        )
    )
    print(f"  installing {PACKAGE} {VERSION} into {directory} (npm)")
    # --legacy-peer-deps: the package's peers (LLM SDKs, typescript) are for its
    # extraction side, not the crawl; --ignore-scripts: nothing runs at install.
    subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--legacy-peer-deps", "--ignore-scripts"],
        cwd=directory,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return directory


def traverse_ts(bench: Bench, directory: Path, seed_url: str, label: str) -> Run:
    """One ``node bench/traverse_ts.mjs`` crawl of ``PAGES`` pages, the whole process."""
    work = bench._dir(label)
    out = work / "result.json"
    since = bench.server.log_offset() if bench.server else 0
    load = os.getloadavg()[0]
    cmd = ["node", str(SCRIPT), str(directory), seed_url, str(PAGES), str(out)]
    rc, wall, usage = run_process(cmd, REPO, dict(os.environ), work / "crawl.log")
    result = json.loads(out.read_text()) if out.exists() else {}
    return Run(
        label=label,
        rc=rc,
        pages=int(result.get("pages", 0)),
        crawl_s=float(result.get("crawl_ms", 0.0)) / 1000,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        maxrss_mb=usage.ru_maxrss / 1024,
        hits=len(bench.server.hits(since)) if bench.server else 0,
        finish_reason="truncated" if result.get("truncated") else "finished",
        load_before=round(load, 2),
        errors=dict(result.get("errors", {})),
        log=str(work / "crawl.log"),
    )


def node_version() -> str:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _row(done: list[Run]) -> dict[str, Any]:
    return {
        "runs": len(done),
        "wall_s": round(median([r.wall_s for r in done]), 3),
        "wall_s_all": [round(r.wall_s, 3) for r in done],
        "wall_pages_per_s": round(median([r.wall_pages_per_s for r in done]), 1),
        "crawl_s": round(median([r.crawl_s for r in done]), 3),
        "crawl_pages_per_s": round(median([r.pages_per_s for r in done]), 1),
        "cpu_s": round(median([r.cpu_s for r in done]), 3),
        "maxrss_mb": round(median([r.maxrss_mb for r in done]), 1),
        "hits": [r.hits for r in done],
        "load_before": [r.load_before for r in done],
    }


# A site of 500 pages (bench/site.py, the bench's seed and page size; Traverse caps a
# crawl at 500 pages) served by its own nginx, crawled whole by:
#
# - ``ours-c1``: `scrapy crawl traverse` in live mode with the bench's settings
#   (bench/run.py: TRAVERSE_MIN_DELAY=0, robots.txt obeyed, no store written) and
#   CONCURRENT_REQUESTS{,_PER_DOMAIN}=1: one request at a time, as Traverse;
# - ``traverse-ts``: `node bench/traverse_ts.mjs`, Traverse's crawlSource (live, no
#   store) with minDelayMs 0, robots.txt obeyed, through forage's guarded fetch with
#   the server's loopback origin allowed.
#
# Traverse is installed on demand by npm into bench/.traverse-ts/ (ignored by git):
# the only network the scenario uses besides loopback. The two alternate run by run
# after --warmup rounds; medians of --runs. Each run must record 500 pages without an
# error, and nginx must log 501 requests (the pages and robots.txt). The figure is
# whole-process pages/s (pages / wall time, start-up and shutdown included, the way a
# user times a command); beside it the crawl's own pages/s (Scrapy's
# elapsed_time_seconds; crawlSource's duration measured inside node), CPU and peak RSS.
# Target: ours-c1 >= 1.2x traverse-ts in whole-process pages/s.
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    directory = install()
    site = generate(bench.scratch / "vs-traverse-site", PAGES, args.page_bytes, args.seed)
    server = Nginx(site.root).start()
    saved = bench.server, bench.origin, bench.seed_url
    bench.server, bench.origin = server, server.origin
    bench.seed_url = server.origin + "/index.html"
    configs: dict[str, Callable[[str], Run]] = {
        "ours-c1": lambda label: bench.traverse(label, pages=PAGES, concurrency=1),
        "traverse-ts": lambda label: traverse_ts(bench, directory, bench.seed_url, label),
    }
    print(f"\n== vs-traverse: {PAGES} pages, concurrency 1, {args.runs} runs (+{args.warmup}) ==")
    runs: dict[str, list[Run]] = {name: [] for name in configs}
    try:
        for i in range(args.warmup + args.runs):
            for name, crawl in configs.items():
                done = crawl(f"vs-{name}-{i}")
                if not bench.check(done, PAGES) or done.hits != PAGES + 1:
                    print(f"  !! {name} run {i}: {done.pages} pages, {done.hits} requests logged")
                    continue
                if i >= args.warmup:
                    runs[name].append(done)
    finally:
        bench.server, bench.origin, bench.seed_url = saved
        server.cleanup()
    rows = {name: _row(done) for name, done in runs.items() if done}
    for name, row in rows.items():
        print(
            f"  {name:<12} {row['wall_pages_per_s']:>7.1f} pages/s whole process "
            f"(wall {row['wall_s']:.3f} s, runs {row['wall_s_all']})  crawl "
            f"{row['crawl_pages_per_s']:.1f} pages/s  CPU {row['cpu_s']:.3f} s  "
            f"peak RSS {row['maxrss_mb']:.1f} MB  load {row['load_before']}"
        )

    def ours_over_theirs(key: str) -> float:
        ours, theirs = rows.get("ours-c1", {}).get(key), rows.get("traverse-ts", {}).get(key)
        return round(ours / theirs, 3) if ours and theirs else 0.0

    ratio = ours_over_theirs("wall_pages_per_s")
    crawl_ratio = ours_over_theirs("crawl_pages_per_s")
    ok = ratio >= TARGET_RATIO
    print(
        f"  ours-c1 / traverse-ts: {ratio:.3f}x whole process (crawl alone {crawl_ratio:.3f}x); "
        f"target >= {TARGET_RATIO}x: {verdict(ok)}"
    )
    return {
        "pages": PAGES,
        "traverse_version": VERSION,
        "forage_version": FORAGE,
        "node": node_version(),
        "rows": rows,
        "ratio": ratio,
        "crawl_ratio": crawl_ratio,
        "target_met": ok,
    }
