"""Start-up and shutdown: a one-page crawl, traverse against the smallest plain spider.

    .venv/bin/python bench/run.py startup [--runs 7] [--baseline DIR]

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from scrapy.settings import default_settings  # noqa: E402

from bench.run import Bench, Run, median, verdict  # noqa: E402
from bench.site import Nginx  # noqa: E402

TARGET_CPU_RATIO = 1.15  # traverse's CPU and wall <= 1.15x the plain spider's
TARGET_RSS_RATIO = 1.1  # traverse's peak RSS <= 1.1x the plain spider's
PAGE_BYTES = 22_000  # the size of the bench site's pages

# Scrapy's EXTENSIONS_BASE without RemoteControl, whose module imports aiohttp and
# builds a TLS context in every Scrapy process (the add-on leaves it out too): the
# "plain, no remote control" row, Scrapy's start-up without it.
_PLAIN_LEAN = "EXTENSIONS_BASE=" + json.dumps(
    {
        name: order
        for name, order in default_settings.EXTENSIONS_BASE.items()
        if name != "scrapy.extensions.remote_control.RemoteControl"
    }
)


def one_page_site(root: Path) -> Path:
    """``/index.html`` of about ``PAGE_BYTES`` with no link, and a ``/robots.txt``."""
    root.mkdir(parents=True, exist_ok=True)
    words = " ".join(f"word{i % 97}" for i in range(PAGE_BYTES // 7))
    (root / "index.html").write_text(
        f"<!doctype html><html><head><title>one page</title></head><body><p>{words}</p>"
        "</body></html>",
        encoding="utf-8",
    )
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n", encoding="utf-8")
    return root


def _modules(run: Run) -> int:
    """Modules the process imported: its ``-X importtime`` lines (PYTHONPROFILEIMPORTTIME)."""
    text = Path(run.log).read_text(encoding="utf-8", errors="replace")
    return sum(1 for row in text.splitlines() if row.startswith("import time:") and "|" in row)


# One crawl of a one-page site (a page of the bench site's size, no links, and a
# robots.txt), each a whole `scrapy` process from its start to its exit:
#
# - ``traverse``: `scrapy crawl traverse` in live mode, TRAVERSE_MAX_PAGES=1, otherwise
#   the bench's settings (bench/run.py, Bench.traverse_cmd);
# - ``plain``: bench/plain_spider.py with CLOSESPIDER_ITEMCOUNT=1, outside the project:
#   the smallest plain Scrapy spider fetching the same page (robots.txt obeyed, as
#   traverse does), with Scrapy's defaults;
# - ``plain, no remote control``: the same without RemoteControl in EXTENSIONS_BASE,
#   Scrapy's own start-up without aiohttp (shown, not a target);
# - ``baseline`` (with ``--baseline DIR``): traverse from another checkout.
#
# Configurations alternate run by run after the warm-up; medians of the process's CPU
# time (user + system, from wait4), its wall time and its peak RSS. One more run of
# each, not measured, counts the modules it imports. Targets: traverse's CPU and wall
# <= 1.15x plain's, its peak RSS <= 1.1x.
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    server = Nginx(one_page_site(bench.scratch / "startup-site")).start()
    saved = bench.origin, bench.seed_url
    bench.origin, bench.seed_url = server.origin, server.origin + "/index.html"
    plain_set = list(args.plain_set)

    def plain(label: str, lean: bool = False) -> Run:
        args.plain_set = [*plain_set, _PLAIN_LEAN] if lean else plain_set
        try:
            return bench.plain(label, pages=1)
        finally:
            args.plain_set = plain_set

    configs: dict[str, Any] = {
        "traverse": lambda label: bench.traverse(label, pages=1),
        "plain": plain,
        "plain, no remote control": lambda label: plain(label, lean=True),
    }
    if args.baseline is not None:
        configs["baseline"] = lambda label: bench.traverse(label, pages=1, cwd=args.baseline)
    print(f"\n== startup: a one-page crawl, {args.runs} runs each (+{args.warmup} warm-up) ==")
    runs: dict[str, list[Run]] = {name: [] for name in configs}
    modules: dict[str, int] = {}
    try:
        for i in range(args.warmup + args.runs):
            for name, crawl in configs.items():
                done = crawl(f"startup-{name.split(',')[0]}-{i}")
                if not bench.check(done, 1):
                    continue
                if i >= args.warmup:
                    runs[name].append(done)
        os.environ["PYTHONPROFILEIMPORTTIME"] = "1"
        try:
            for name, crawl in configs.items():
                modules[name] = _modules(crawl(f"startup-{name.split(',')[0]}-imports"))
        finally:
            del os.environ["PYTHONPROFILEIMPORTTIME"]
    finally:
        bench.origin, bench.seed_url = saved
        server.cleanup()

    rows: dict[str, dict[str, Any]] = {}
    for name, done in runs.items():
        rows[name] = {
            "runs": len(done),
            "cpu_s": round(median([r.cpu_s for r in done]), 3),
            "cpu_s_all": [round(r.cpu_s, 3) for r in done],
            "wall_s": round(median([r.wall_s for r in done]), 3),
            "maxrss_mb": round(median([r.maxrss_mb for r in done]), 1),
            "modules": modules.get(name, 0),
            "load_before": [r.load_before for r in done],
        }
    plain_row = rows["plain"]

    def ratio(name: str, key: str) -> float:
        return round(rows[name][key] / plain_row[key], 3) if plain_row[key] else 0.0

    print(f"\n  {'':<26} {'CPU s':>7} {'wall s':>7} {'RSS MB':>7} {'modules':>8}   vs plain")
    for name, row in rows.items():
        print(
            f"  {name:<26} {row['cpu_s']:>7.3f} {row['wall_s']:>7.3f} {row['maxrss_mb']:>7.1f} "
            f"{row['modules']:>8}   CPU {ratio(name, 'cpu_s'):.3f}x  wall "
            f"{ratio(name, 'wall_s'):.3f}x  RSS {ratio(name, 'maxrss_mb'):.3f}x  "
            f"(CPU runs {row['cpu_s_all']})"
        )
    ok = (
        ratio("traverse", "cpu_s") <= TARGET_CPU_RATIO
        and ratio("traverse", "wall_s") <= TARGET_CPU_RATIO
        and ratio("traverse", "maxrss_mb") <= TARGET_RSS_RATIO
    )
    print(
        f"  target: CPU and wall <= {TARGET_CPU_RATIO}x plain, peak RSS <= "
        f"{TARGET_RSS_RATIO}x: {verdict(ok)}"
    )
    return {"rows": rows, "target_met": ok}
