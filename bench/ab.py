"""A/B of this checkout against another: live, capture and replay, interleaved.

    .venv/bin/python bench/run.py ab --baseline DIR [--runs 5]

``DIR`` is another checkout of the project (``git worktree add DIR <commit>``).
Each repetition runs, in this order, live, capture and replay with this checkout and
then with ``DIR``, so that drift in the machine's load hits both alike. Each
capture writes a fresh store; each replay reads the store its own checkout
captured in that repetition. Medians of pages/s (Scrapy's ``elapsed_time_seconds``),
whole-process pages/s (wall clock, start-up included) and CPU per page
(``ru_utime + ru_stime`` of the crawl process and the children it waited for)
are reported, with the ratio of this checkout to ``DIR``.
"""

from __future__ import annotations

import shutil
from typing import Any

MODES = ("live", "capture", "replay")
TOLERANCE = 0.05  # a change of layout may cost at most 5 % of pages/s or CPU/page


def run(bench: Any) -> dict[str, Any]:
    from bench import run as r  # the registry imports this module, not the other way

    args = bench.args
    if args.baseline is None:
        raise SystemExit("ab needs --baseline DIR (another checkout)")
    pages = bench.site.pages
    print(f"\n== ab: {pages} pages, {args.runs} runs each, baseline {args.baseline} ==")
    sides = {"this": None, "baseline": args.baseline}
    runs: dict[tuple[str, str], list[Any]] = {(s, m): [] for s in sides for m in MODES}
    for i in range(args.warmup + args.runs):
        for side, cwd in sides.items():
            store = bench.scratch / f"ab-store-{side}"
            shutil.rmtree(store, ignore_errors=True)
            done = {
                "live": bench.traverse(f"ab-{side}-live-{i}", cwd=cwd),
                "capture": bench.traverse(
                    f"ab-{side}-capture-{i}", mode="capture", store=store, cwd=cwd
                ),
            }
            done["replay"] = bench.traverse(
                f"ab-{side}-replay-{i}", mode="replay", store=store, cwd=cwd
            )
            for mode, one in done.items():
                bench.check(one, pages)
                if i >= args.warmup:
                    runs[(side, mode)].append(one)
    result: dict[str, Any] = {}
    for mode in MODES:
        this, base = (r.summary(runs[(side, mode)]) for side in sides)
        print(r.line(f"{mode}, this checkout", this))
        print(r.line(f"{mode}, baseline", base))
        speed = this["pages_per_s"] / base["pages_per_s"]
        whole = this["wall_pages_per_s"] / base["wall_pages_per_s"]
        cpu = this["cpu_ms_per_page"] / base["cpu_ms_per_page"]
        ok = speed >= 1 - TOLERANCE and cpu <= 1 + TOLERANCE
        print(
            f"  {mode}: pages/s {speed:.3f}x, whole-process pages/s {whole:.3f}x, "
            f"CPU/page {cpu:.3f}x  {r.verdict(ok)}"
        )
        result[mode] = {
            "this": this,
            "baseline": base,
            "pages_per_s_ratio": round(speed, 3),
            "wall_pages_per_s_ratio": round(whole, 3),
            "cpu_per_page_ratio": round(cpu, 3),
            "within_tolerance": ok,
        }
    return result
