"""Rendered pages per second (docs/rendering.md, "Cost").

    .venv/bin/python bench/render.py                 # 50 pages, 3 measured runs each
    .venv/bin/python bench/render.py --pages 50 --runs 5 --concurrency 4

What it measures and how: the comment above ``main``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.run import parse_stats, python, run_process  # noqa: E402
from bench.site import Nginx  # noqa: E402

RESULTS = REPO / "bench" / "results"
TEXT = "A page of the rendering benchmark, with a paragraph of ordinary prose. " * 6

JS_PAGE = """<!doctype html><html><head><title>Page {i}</title></head>
<body><div id="root"></div><script>
fetch("data/p{i:03d}.json").then(r => r.json()).then(d => {{
  document.getElementById("root").innerHTML = "<h1>" + d.title + "</h1><p>" + d.text + "</p>"
    + d.links.map(h => '<a href="' + h + '">' + h + "</a>").join(" ");
}});
</script></body></html>"""

STATIC_PAGE = """<!doctype html><html><head><title>Page {i}</title></head>
<body><div id="root"><h1>{title}</h1><p>{text}</p>{links}</div></body></html>"""

CONFIGS = (
    ("never/static", "never", "static"),
    ("on-shell-warning/static", "on-shell-warning", "static"),
    ("always/js", "always", "js"),
    ("on-shell-warning/js", "on-shell-warning", "js"),
)


def page_name(i: int) -> str:
    return f"p{i:03d}.html"


def generate(root: Path, pages: int) -> None:
    """Both sites under ``root/js`` and ``root/static``; deterministic."""
    for kind in ("js", "static"):
        (root / kind / "data").mkdir(parents=True, exist_ok=True)
    (root / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    for i in range(pages):
        links = [page_name(c) for c in (2 * i + 1, 2 * i + 2) if c < pages]
        title = f"Page {i}"
        data = {"title": title, "text": TEXT, "links": links}
        (root / "js" / page_name(i)).write_text(JS_PAGE.format(i=i))
        (root / "js" / "data" / f"p{i:03d}.json").write_text(json.dumps(data))
        anchors = " ".join(f'<a href="{h}">{h}</a>' for h in links)
        (root / "static" / page_name(i)).write_text(
            STATIC_PAGE.format(i=i, title=title, text=TEXT, links=anchors)
        )


def crawl(
    args: argparse.Namespace, origin: str, policy: str, kind: str, work: Path
) -> dict[str, Any]:
    work.mkdir(parents=True)
    cmd = [
        python(), "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={origin}/{kind}/{page_name(0)}",
        "-s", "TRAVERSE_MODE=live",
        "-s", f"TRAVERSE_RENDER={policy}",
        "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_MAX_PAGES={args.pages}",
        "-s", "TRAVERSE_MAX_DEPTH=50",
        "-s", f"TRAVERSE_EGRESS_ALLOW={origin}",
        "-s", f"TRAVERSE_STORE={work / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={work / 'manifests'}",
        "-s", "LOG_LEVEL=INFO",
    ]  # fmt: skip
    if args.concurrency:
        n = str(args.concurrency)
        cmd += ["-s", f"CONCURRENT_REQUESTS={n}", "-s", f"CONCURRENT_REQUESTS_PER_DOMAIN={n}"]
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="traverse_crawl.settings")
    log = work / "crawl.log"
    rc, wall, usage = run_process(cmd, REPO, env, log)
    stats = parse_stats(log.read_text(encoding="utf-8", errors="replace"))
    pages = rendered = errors = 0
    for path in (work / "manifests").glob("*.json"):
        for page in json.loads(path.read_text(encoding="utf-8"))["pages"]:
            pages += 1
            fetch = page["fetch"]
            errors += "error" in fetch
            rendered += bool(fetch.get("snapshot", {}).get("rendered"))
    crawl_s = float(stats.get("elapsed_time_seconds") or 0.0)
    return {
        "rc": rc,
        "pages": pages,
        "rendered": rendered,
        "errors": errors,
        "crawl_s": round(crawl_s, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "pages_per_s": round(pages / crawl_s, 2) if crawl_s else 0.0,
        "rendered_per_s": round(rendered / crawl_s, 2) if crawl_s else 0.0,
        "log": str(log),
    }


def median(runs: list[dict[str, Any]], key: str) -> float:
    return round(float(statistics.median(r[key] for r in runs)), 3)


# Two twin sites of ``--pages`` pages are generated and served by nginx on
# 127.0.0.1 (``bench.site.Nginx``). Page ``i`` links to pages ``2i+1`` and
# ``2i+2``, so a BFS from page 0 reaches every page:
#
# - the *js* site is a client-rendered app: each page is an empty
#   ``<div id="root">`` and an inline script that fetches ``/data/pNNN.json`` and
#   writes the heading, the text and the links into the page. Without a browser
#   a crawl finds page 0 and nothing else.
# - the *static* site serves the same heading, text and links as plain HTML.
#
# Each configuration is a real ``scrapy crawl traverse`` process (``live`` mode,
# ``TRAVERSE_MIN_DELAY=0``, the project's concurrency unless ``--concurrency``):
#
# - ``never/static``: plain fetching, the baseline;
# - ``on-shell-warning/static``: the shell check on every page, nothing rendered;
# - ``always/js``: every page rendered in Chromium;
# - ``on-shell-warning/js``: every page fetched plain, found to be a shell, rendered.
#
# Per run: *crawl time* is Scrapy's ``elapsed_time_seconds`` (spider opened to
# closed; the browser starts inside it, on the first rendered page), *pages* and
# *rendered* come from the manifest, *pages/s* = pages / crawl time, *wall* is
# the whole process, *CPU* and *peak RSS* come from ``os.wait4`` on the crawl
# process (the browser's own processes are not in the RSS). The median of
# ``--runs`` runs after ``--warmup`` unmeasured ones is printed and written as
# JSON to ``bench/results/render-<time>.json`` and ``latest-render.json``.
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=0, help="0: the project's settings")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="traverse-bench-render-"))
    generate(scratch / "site", args.pages)
    server = Nginx(scratch / "site").start()
    results: dict[str, Any] = {}
    ok = True
    try:
        counter = 0
        for label, policy, kind in CONFIGS:
            runs = []
            for n in range(args.warmup + args.runs):
                counter += 1
                work = scratch / "runs" / f"{counter:03d}-{label.replace('/', '-')}"
                run = crawl(args, server.origin, policy, kind, work)
                if n >= args.warmup:
                    runs.append(run)
            expected_rendered = args.pages if kind == "js" else 0
            good = all(
                r["rc"] == 0
                and r["pages"] == args.pages
                and r["rendered"] == expected_rendered
                and not r["errors"]
                for r in runs
            )
            ok &= good
            results[label] = {
                "ok": good,
                "pages": runs[0]["pages"],
                "rendered": runs[0]["rendered"],
                "crawl_s": median(runs, "crawl_s"),
                "wall_s": median(runs, "wall_s"),
                "cpu_s": median(runs, "cpu_s"),
                "maxrss_mb": median(runs, "maxrss_mb"),
                "pages_per_s": median(runs, "pages_per_s"),
                "rendered_per_s": median(runs, "rendered_per_s"),
                "runs": runs,
            }
            r = results[label]
            print(
                f"{label:26} pages {r['pages']:3}  rendered {r['rendered']:3}  "
                f"crawl {r['crawl_s']:6.2f}s  {r['pages_per_s']:6.2f} pages/s  "
                f"{r['rendered_per_s']:6.2f} rendered/s  wall {r['wall_s']:6.2f}s  "
                f"cpu {r['cpu_s']:6.2f}s  rss {r['maxrss_mb']:6.1f}MB  "
                + ("ok" if good else "FAILED"),
                flush=True,
            )
    finally:
        server.cleanup()
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    report = {
        "bench": "render",
        "time": stamp,
        "pages": args.pages,
        "runs": args.runs,
        "warmup": args.warmup,
        "concurrency": args.concurrency or "project settings",
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2)
    (RESULTS / f"render-{stamp}.json").write_text(text)
    (RESULTS / "latest-render.json").write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
