"""Extraction: capture with ``TRAVERSE_EXTRACT`` against capture without, and
``scrapy extract`` over the store, offline.

    .venv/bin/python bench/run.py extract [--runs 5]

The extraction file is ``bench/extract.toml`` (eight fields, one ``many``, one item
per page of the bench site). What is measured and how: the comment above ``run``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

RULES = Path(__file__).resolve().with_name("extract.toml")
TARGET_CAPTURE_RATIO = 0.8  # capture with extraction pages/s >= 0.8x capture without
TARGET_EXTRACT_PAGES_PER_S = 1500  # scrapy extract over the store


def unavailable(repo: Path, python: str) -> str | None:
    """Why this checkout cannot run the scenario (no ``scrapy extract``), or None."""
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="traverse_crawl.settings")
    done = subprocess.run(
        [python, "-m", "scrapy", "extract", "-h"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        said = " ".join((done.stdout + done.stderr).split())
        return f"`scrapy extract -h` exits {done.returncode}: {said[:200]}"
    return None


def items_lines(directory: Path) -> int:
    return sum(
        sum(1 for _ in path.open("rb")) for path in directory.glob("*.jsonl") if path.is_file()
    )


def one_page_manifests(manifests: Path, into: Path) -> Path:
    """The same seed's manifest with only its first page: the fixed cost of a run."""
    into.mkdir(parents=True, exist_ok=True)
    for path in manifests.glob("*.json"):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["pages"] = manifest["pages"][:1]
        manifest["warnings"] = []
        manifest["truncated"] = False
        (into / path.name).write_text(json.dumps(manifest), encoding="utf-8")
    return into


def extract_once(
    r: Any, bench: Any, label: str, store: Path, manifests: Path
) -> tuple[dict[str, Any], Path]:
    """One ``scrapy extract`` process; its wall and CPU seconds, and its items dir."""
    work = bench.scratch / "extract-runs" / label
    work.mkdir(parents=True)
    items = work / "items"
    cmd = [
        r.python(), "-m", "scrapy", "extract",
        "-s", f"TRAVERSE_EXTRACT={RULES}",
        "-s", f"TRAVERSE_STORE={store}",
        "-s", f"TRAVERSE_MANIFEST_DIR={manifests}",
        "-s", f"TRAVERSE_ITEMS_DIR={items}",
        *(arg for setting in bench.args.set for arg in ("-s", setting)),
    ]  # fmt: skip
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="traverse_crawl.settings")
    load = os.getloadavg()[0]
    rc, wall, usage = r.run_process(cmd, r.REPO, env, work / "extract.log")
    row = {
        "label": label,
        "rc": rc,
        "wall_s": round(wall, 3),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
        "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
        "items": items_lines(items) if items.is_dir() else 0,
        "load_before": round(load, 2),
        "log": str(work / "extract.log"),
    }
    return row, items


# Capture without and with extraction alternate (capture, capture + TRAVERSE_EXTRACT,
# capture, ...), each into a fresh store, so drift in the shared machine's load hits
# both alike; after ``--warmup`` rounds, ``--runs`` rounds are measured. Reported: the
# medians of pages/s (Scrapy's ``elapsed_time_seconds``) and of CPU per page
# (``ru_utime + ru_stime`` of the crawl process and the children it waited for), with
# the ratio of the medians and the ratio of each back-to-back pair. Every run is
# checked to have crawled every page, and every extracting run to have written one
# item per page.
#
# Then ``scrapy extract`` re-extracts the last capture's store, offline, alternating
# with a run over the same store whose manifest keeps only the seed page, ``--warmup``
# + ``--runs`` times each. Reported: whole-process pages/s (pages / wall seconds, the
# interpreter's start-up and imports included: what a user waits for), and the
# marginal pages/s, (pages - 1) / (wall of the full run - wall of the one-page run)
# per back-to-back pair, median over pairs: the start-up and fixed costs cancel out.
# The items file ``scrapy extract`` writes is compared byte for byte with the one the
# capture wrote (the same snapshots and rules give the same bytes).
def run(bench: Any) -> dict[str, Any]:
    from bench import run as r  # the registry imports this module, not the other way

    args = bench.args
    pages = bench.site.pages
    print(f"\n== extract: capture {pages} pages with and without TRAVERSE_EXTRACT ==")
    why = unavailable(r.REPO, r.python())
    if why is not None:
        print(f"  skipped: this checkout has no extraction: {why}")
        return {"skipped": why}
    runs: dict[str, list[Any]] = {"capture": [], "capture-extract": []}
    last_store: Path | None = None
    last_items: Path | None = None
    last_manifests: Path | None = None
    for i in range(args.warmup + args.runs):
        plain = bench.traverse(f"capture-{i}", mode="capture")
        bench.check(plain, pages)
        store = bench.scratch / f"extract-store-{i}"
        items = bench.scratch / f"extract-items-{i}"
        with_rules = bench.traverse(
            f"capture-extract-{i}",
            mode="capture",
            store=store,
            extra=[f"TRAVERSE_EXTRACT={RULES}", f"TRAVERSE_ITEMS_DIR={items}"],
        )
        bench.check(with_rules, pages)
        written = items_lines(items) if items.is_dir() else 0
        if written != pages:
            print(f"  !! {with_rules.label}: {written} items for {pages} pages")
        if i >= args.warmup:
            runs["capture"].append(plain)
            runs["capture-extract"].append(with_rules)
        for old in (last_store, last_items):
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        last_store, last_items = store, items
        last_manifests = Path(with_rules.manifest).parent if with_rules.manifest else None
    out: dict[str, Any] = {"pages": pages, "rules": str(RULES)}
    for name, measured in runs.items():
        out[name] = r.summary(measured)
        print(r.line(name, out[name]))
    plain_s, rules_s = out["capture"], out["capture-extract"]
    ratio = rules_s["pages_per_s"] / plain_s["pages_per_s"] if plain_s["pages_per_s"] else 0.0
    pairs = [
        e.pages_per_s / c.pages_per_s
        for c, e in zip(runs["capture"], runs["capture-extract"], strict=True)
        if c.pages_per_s
    ]
    out["capture_ratio"] = round(ratio, 3)
    out["capture_pair_ratios"] = [round(p, 3) for p in pairs]
    out["extract_cpu_ms_per_page"] = round(
        rules_s["cpu_ms_per_page"] - plain_s["cpu_ms_per_page"], 2
    )
    print(
        f"  with/without extraction pages/s {ratio:.2f}x (per pair {out['capture_pair_ratios']}); "
        f"extraction costs {out['extract_cpu_ms_per_page']:+.2f} ms of CPU per page"
    )
    capture_ok = ratio >= TARGET_CAPTURE_RATIO
    print(f" target: capture with extraction >= {TARGET_CAPTURE_RATIO}x: {r.verdict(capture_ok)}")
    out["runs"] = [one.to_dict() for measured in runs.values() for one in measured]
    if last_store is None or last_manifests is None or last_items is None:
        return out

    print(f"\n== extract: scrapy extract over the store of {pages} pages, offline ==")
    bench.stop_server()  # extraction reads the store only: nothing may need the site
    one = one_page_manifests(last_manifests, bench.scratch / "one-page-manifests")
    full_rows: list[dict[str, Any]] = []
    one_rows: list[dict[str, Any]] = []
    same_bytes = True
    for i in range(args.warmup + args.runs):
        full, full_items = extract_once(r, bench, f"extract-{i}", last_store, last_manifests)
        single, _ = extract_once(r, bench, f"extract-one-page-{i}", last_store, one)
        for row, expected in ((full, pages), (single, 1)):
            if row["rc"] != 0 or row["items"] != expected:
                print(
                    f"  !! {row['label']}: rc={row['rc']} items={row['items']}/{expected}; "
                    f"log {row['log']}"
                )
        captured = sorted(last_items.glob("*.jsonl"))
        same_bytes &= bool(captured)  # no items from the capture: nothing to be equal to
        for path in captured:
            rewritten = full_items / path.name
            same_bytes &= rewritten.is_file() and rewritten.read_bytes() == path.read_bytes()
        if i >= args.warmup:
            full_rows.append(full)
            one_rows.append(single)
    wall = statistics.median(row["wall_s"] for row in full_rows)
    cpu = statistics.median(row["cpu_s"] for row in full_rows)
    margins = [
        (pages - 1) / (f["wall_s"] - s["wall_s"])
        for f, s in zip(full_rows, one_rows, strict=True)
        if f["wall_s"] > s["wall_s"]
    ]
    whole = pages / wall if wall else 0.0
    # No pair where the full run took longer than the one-page run: the noise is larger
    # than the extraction itself, and no marginal rate can be given.
    marginal = statistics.median(margins) if margins else None
    out["extract"] = {
        "wall_s": round(wall, 3),
        "one_page_wall_s": round(statistics.median(row["wall_s"] for row in one_rows), 3),
        "cpu_ms_per_page": round(1000 * cpu / pages, 3),
        "maxrss_mb": statistics.median(row["maxrss_mb"] for row in full_rows),
        "pages_per_s": round(whole, 1),
        "marginal_pages_per_s": round(marginal, 1) if marginal is not None else None,
        "marginal_pages_per_s_all": [round(m, 1) for m in margins],
        "items_equal_capture": same_bytes,
        "runs": full_rows + one_rows,
    }
    shown = f"{marginal:.1f} pages/s" if marginal is not None else "not measurable (noise)"
    print(
        f"  scrapy extract: {whole:.1f} pages/s whole process (wall {wall:.2f} s, start-up "
        f"included; one-page run {out['extract']['one_page_wall_s']:.2f} s); marginal "
        f"{shown} (pairs {out['extract']['marginal_pages_per_s_all']}); "
        f"CPU {out['extract']['cpu_ms_per_page']:.2f} ms/page"
    )
    print(f"  items file equals the capture's, byte for byte: {same_bytes}")
    extract_ok = whole >= TARGET_EXTRACT_PAGES_PER_S
    marginal_ok = marginal is not None and marginal >= TARGET_EXTRACT_PAGES_PER_S
    print(
        f" target: scrapy extract >= {TARGET_EXTRACT_PAGES_PER_S} pages/s: whole process "
        f"{r.verdict(extract_ok)}, marginal {r.verdict(marginal_ok)}"
    )
    out["target"] = {
        "capture_ratio_min": TARGET_CAPTURE_RATIO,
        "capture_ok": capture_ok,
        "extract_pages_per_s_min": TARGET_EXTRACT_PAGES_PER_S,
        "extract_ok": extract_ok,
        "extract_marginal_ok": marginal_ok,
    }
    return out
