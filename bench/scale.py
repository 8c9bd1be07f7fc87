"""Memory and speed at scale: 2,000 / 20,000 / 100,000 pages.

    .venv/bin/python bench/run.py scale                              # every count, both crawlers
    .venv/bin/python bench/run.py scale --scale 100000 --crawlers plain --runs 1 --warmup 0

What it measures and how: the comment above ``bench_scale``.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

from bench.run import RESULTS, Bench, Run, line, summary, verdict

TARGET_FLAT_RATIO = 1.3  # RSS(100,000) <= 1.3x RSS(2,000)
TARGET_PLAIN_RATIO = 0.6  # RSS(100,000) <= 0.6x the plain spider's
COUNTS = "2000,20000,100000"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scale", default=COUNTS, help=f"scale: page counts ({COUNTS})")
    parser.add_argument(
        "--crawlers", default="traverse,plain", help="scale: which crawlers (traverse,plain)"
    )


def _bench_for(bench: Bench, pages: int) -> Bench:
    if bench.site.pages == pages:
        return bench
    args = copy.copy(bench.args)
    args.pages = pages
    if bench.args.site_dir is not None:
        base = Path(bench.args.site_dir)
        args.site_dir = base.parent / f"{base.name}-{pages}"
    return Bench(args)


def _previous() -> dict[str, Any]:
    try:
        data = json.loads((RESULTS / "latest-scale.json").read_text(encoding="utf-8"))
        return dict(data["scale"]["rows"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


# For each page count N a site of N pages (``bench/site.py``, same seed, so the
# same generator; each count is its own link graph) is served by nginx, and
# ``scrapy crawl traverse`` (live, ``TRAVERSE_MAX_PAGES=N``) and the plain spider
# (``CLOSESPIDER_ITEMCOUNT=N``) crawl all of it, interleaved, ``--runs`` times after
# ``--warmup``. Per run: peak RSS (``ru_maxrss`` from ``os.wait4``), pages/s over
# Scrapy's ``elapsed_time_seconds``, CPU per page — as ``bench/run.py``.
#
# The plain spider takes minutes at 100,000 pages: ``--scale`` and ``--crawlers``
# select a piece. Rows not measured by this invocation are carried over from
# ``bench/results/latest-scale.json`` (with the date they were measured), so the
# targets can be judged from pieces run at different times. With ``--site-dir D``
# the sites are kept in ``D-<N>`` and reused by later pieces.
#
# Targets: traverse's peak RSS at 100,000 pages <= 1.3x its peak RSS at 2,000,
# and <= 0.6x the plain spider's at 100,000.
def bench_scale(bench: Bench) -> dict[str, Any]:
    args = bench.args
    counts = [int(c) for c in args.scale.split(",") if c]
    crawlers = [c for c in args.crawlers.split(",") if c]
    rows: dict[str, Any] = _previous()
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    print(f"\n== scale: {counts} pages, {crawlers}, {args.runs} runs (+{args.warmup} warm-up) ==")
    for pages in counts:
        site = _bench_for(bench, pages)
        try:
            if site.server is None:
                site.start_server()
            runs: dict[str, list[Run]] = {c: [] for c in crawlers}
            for i in range(args.warmup + args.runs):  # interleaved: drift hits both alike
                for crawler in crawlers:
                    crawl = site.traverse if crawler == "traverse" else site.plain
                    run = crawl(f"scale-{crawler}-{pages}-{i}", pages=pages)
                    site.check(run, pages)
                    if i >= args.warmup:
                        runs[crawler].append(run)
            for crawler, done in runs.items():
                s = summary(done)
                print(line(f"{crawler} at {pages} pages", s))
                rows[f"{crawler}-{pages}"] = {
                    "crawler": crawler,
                    "pages": pages,
                    "measured": now,
                    "summary": s,
                    "runs": [r.to_dict() for r in done],
                }
        finally:
            if site is not bench:
                site.close()
    return {"rows": rows, "target": _targets(rows)}


run = bench_scale  # the entry point bench/run.py calls for a scenario module


def _rss(rows: dict[str, Any], key: str) -> float | None:
    row = rows.get(key)
    return float(row["summary"]["maxrss_mb"]) if row else None


def _targets(rows: dict[str, Any]) -> dict[str, Any]:
    small, large = _rss(rows, "traverse-2000"), _rss(rows, "traverse-100000")
    plain = _rss(rows, "plain-100000")
    out: dict[str, Any] = {"flat_max": TARGET_FLAT_RATIO, "plain_max": TARGET_PLAIN_RATIO}
    print(" peak RSS (MB), medians:")
    for key in sorted(rows, key=lambda k: (rows[k]["crawler"], rows[k]["pages"])):
        row = rows[key]
        s = row["summary"]
        print(
            f"  {row['crawler']:<9} {row['pages']:>7} pages: {s['maxrss_mb']:7.1f} MB  "
            f"{s['pages_per_s']:7.1f} pages/s  {s['cpu_ms_per_page']:.2f} ms CPU/page  "
            f"(measured {row['measured']})"
        )
    checks = (
        ("flat", "traverse RSS 100,000 / 2,000 pages", large, small, TARGET_FLAT_RATIO),
        ("plain", "traverse / plain RSS at 100,000 pages", large, plain, TARGET_PLAIN_RATIO),
    )
    for name, what, top, bottom, target in checks:
        if top and bottom:
            out[f"{name}_ratio"] = round(top / bottom, 3)
            out[f"{name}_ok"] = top / bottom <= target
            print(
                f" {what}: {top / bottom:.2f}x (target <= {target}x): {verdict(out[f'{name}_ok'])}"
            )
    return out
