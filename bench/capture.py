"""Capture (the default mode) against live, on the same site and server.

    .venv/bin/python bench/run.py capture [--runs 5]

What it measures and how: the comment above ``bench_capture``.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

TARGET_CAPTURE_RATIO = 0.9  # capture pages/s >= 0.9x live pages/s
_WRITER_CPU = re.compile(r"snapshot writer process: .* ([\d.]+) s of CPU")


def writer_cpu_ms_per_page(runs: list[Any], pages: int) -> float | None:
    """Median CPU per page of the snapshot writer process (part of each run's CPU)."""
    found = [_WRITER_CPU.search(Path(run.log).read_text(errors="replace")) for run in runs]
    cpu = [1000 * float(m.group(1)) / pages for m in found if m]
    return round(statistics.median(cpu), 2) if cpu else None


# Live and capture runs alternate (live, capture, live, capture, ...), each
# capture into a fresh store, so drift in the machine's load hits both alike;
# medians of pages/s (Scrapy's ``elapsed_time_seconds``) and of CPU per page
# (``ru_utime + ru_stime`` of the crawl process, which includes the snapshot
# writer process it waited for) are reported with their ratio; the writer
# process's own CPU (logged by the pipeline) is reported beside it, and the crawl
# process's own CPU is the difference. Every capture is checked to have stored
# one snapshot per page.
#
# ``--baseline DIR`` adds a third configuration, interleaved with the other two:
# capture with the ``traverse_crawl`` package of another checkout (``git worktree
# add DIR <commit>`` or ``git archive``), for an A/B of a change to the write path.
def bench_capture(bench: Any) -> dict[str, Any]:
    from bench import run as r  # the registry imports this module, not the other way

    args = bench.args
    pages = bench.site.pages
    baseline: Path | None = args.baseline
    labels = ["live", "capture"] + (["capture-baseline"] if baseline else [])
    print(f"\n== capture against live: {pages} pages, {args.runs} runs each ==")
    runs: dict[str, list[Any]] = {name: [] for name in labels}
    for i in range(args.warmup + args.runs):
        for name in labels:
            if name == "capture-baseline":
                assert baseline is not None
                run = bench.traverse(f"{name}-{i}", mode="capture", cwd=baseline)
            else:
                run = bench.traverse(f"{name}-{i}", mode=name)
            bench.check(run, pages)
            stored = int(run.stats.get("snapshot/stored", 0))
            if name != "live" and stored != pages:
                print(f"  !! {run.label}: {stored} snapshots stored for {pages} pages")
            if i >= args.warmup:
                runs[name].append(run)
    out: dict[str, Any] = {"pages": pages, "baseline": str(baseline) if baseline else None}
    for name in labels:
        out[name] = r.summary(runs[name])
        print(r.line(name, out[name]))
        if name != "live":
            writer = writer_cpu_ms_per_page(runs[name], pages)
            out[name]["writer_cpu_ms_per_page"] = writer
            if writer is not None:
                own = out[name]["cpu_ms_per_page"] - writer
                print(f"    of its CPU: writer process {writer:.2f}, crawl {own:.2f} ms/page")
    live, cap = out["live"], out["capture"]
    ratio = cap["pages_per_s"] / live["pages_per_s"] if live["pages_per_s"] else 0.0
    # Per run pair too: a pair ran back to back, so its ratio sees the same load.
    pairs = [
        c.pages_per_s / lv.pages_per_s
        for lv, c in zip(runs["live"], runs["capture"], strict=True)
        if lv.pages_per_s
    ]
    out["ratio"] = round(ratio, 3)
    out["pair_ratios"] = [round(p, 3) for p in pairs]
    out["cpu_extra_ms_per_page"] = round(cap["cpu_ms_per_page"] - live["cpu_ms_per_page"], 2)
    print(
        f"  capture/live pages/s {ratio:.2f}x (per pair {out['pair_ratios']}); "
        f"capture costs {out['cpu_extra_ms_per_page']:+.2f} ms of CPU per page more than live"
    )
    if baseline:
        base = out["capture-baseline"]
        print(
            f"  baseline capture/live {base['pages_per_s'] / live['pages_per_s']:.2f}x, "
            f"CPU {base['cpu_ms_per_page']:.2f} -> {cap['cpu_ms_per_page']:.2f} ms/page"
        )
    ok = ratio >= TARGET_CAPTURE_RATIO
    print(f" target: capture >= {TARGET_CAPTURE_RATIO}x live: {r.verdict(ok)}")
    out["runs"] = [run.to_dict() for name in labels for run in runs[name]]
    out["target"] = {"ratio_min": TARGET_CAPTURE_RATIO, "ok": ok}
    return out
