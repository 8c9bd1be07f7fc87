"""The main job: crawl the bundled demo site, then replay it with the server stopped.

Run from the project directory: ``python -m traverse_crawl.demo [OUTPUT_DIR]``.
Both crawls are real ``scrapy crawl traverse`` runs, with the demo's extraction and
checks files (``demo/extract.toml``, ``demo/checks.toml``); the replay opens no socket.
``scrapy report`` writes the capture's HTML report (docs/reports.md) to
``OUTPUT_DIR/report.html`` and the path is printed. Last, a few extracted values, the
check that fails on purpose, and one value's evidence: its ``sourceRef``, its span and
the stored bytes around it (docs/checks.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from traverse_crawl.demo.server import DemoServer

HERE = Path(__file__).resolve().parent
# A check that fails makes the crawl's exit status 3 (docs/monitoring.md, "Exit status"): the demo's
# checks fail one on purpose.
CHECK_FAILED = 3


def crawl(origin: str, out: Path, mode: str) -> dict[str, Any]:
    manifests = out / f"manifests-{mode}"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={origin}/index.html", "-a", "source_id=demo",
        "-s", f"TRAVERSE_MODE={mode}",
        "-s", f"TRAVERSE_STORE={out / 'snapshots'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={manifests}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={origin}",
        "-s", "TRAVERSE_MIN_DELAY=0.2",
        "-s", "TRAVERSE_MAX_PAGES=20", "-s", "TRAVERSE_MAX_DEPTH=3",
        "-s", "LOG_LEVEL=ERROR",
        "-s", f"TRAVERSE_EXTRACT={HERE / 'extract.toml'}",
        "-s", f"TRAVERSE_CHECKS={HERE / 'checks.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={out / f'items-{mode}'}",
        "-O", str(out / f"pages-{mode}.jsonl"),
    ]  # fmt: skip
    done = subprocess.run(command, check=False)
    if done.returncode not in (0, CHECK_FAILED):
        raise subprocess.CalledProcessError(done.returncode, command)
    (manifest,) = [m for m in manifests.glob("*.json") if not m.name.endswith(".checks.json")]
    data: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8"))
    print(f"\n== {mode}: {manifest}")
    for page in data["pages"]:
        fetch = page["fetch"]
        outcome = (
            f"{fetch['snapshot']['status']} {fetch['snapshot']['contentType']}"
            + (" (from store)" if fetch["snapshot"].get("fromCache") else "")
            if "snapshot" in fetch
            else f"{fetch['error']['kind']}: {fetch['error']['message']}"
        )
        print(f"  depth {page['depth']}  {page['url']}  ->  {outcome}")
    for warning in data["warnings"]:
        print(f"  warning: {warning}")
    return data


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".traverse/demo").resolve()
    with DemoServer() as origin:
        print(f"demo site on {origin}; output in {out}")
        captured = crawl(origin, out, "capture")
    print("\ndemo server stopped; replaying from the store with no network")
    replayed = crawl(origin, out, "replay")
    refs = [[p.get("sourceRef") for p in m["pages"]] for m in (captured, replayed)]
    same = refs[0] == refs[1]
    print(f"\nreplay reproduces the capture's sourceRefs: {same}")
    report = out / "report.html"
    subprocess.run(
        [sys.executable, "-m", "scrapy", "report", str(out / "manifests-capture"),
         "-o", str(report), "-s", f"TRAVERSE_STORE={out / 'snapshots'}"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    print(f"\nreport of the capture (open it in a browser): {report}")
    evidence(out)
    return 0 if same else 1


def evidence(out: Path) -> None:
    """A few extracted values, the failing check, one value's bytes in the store."""
    from traverse_crawl.snapshots.store import open_snapshot_store

    (items_file,) = (out / "items-capture").glob("*.jsonl")
    items = [json.loads(line) for line in items_file.read_text(encoding="utf-8").splitlines()]
    print(f"\n== extracted: {len(items)} item(s) in {items_file}")
    for item in items[:3]:
        fields = ", ".join(f"{k}={v!r}" for k, v in item["fields"].items())
        missing = f"  (missing: {', '.join(item['missing'])})" if item["missing"] else ""
        print(f"  {item['type']}: {fields}{missing}  <- {item['url']}")
    (checks_file,) = (out / "manifests-capture").glob("*.checks.json")
    checks = json.loads(checks_file.read_text(encoding="utf-8"))
    print(f"\n== checks: {len(checks['results']) - checks['failed']} passed, "
          f"{checks['failed']} failed on purpose ({checks_file})")  # fmt: skip
    for result in checks["results"]:
        if not result["passed"]:
            print(f"  FAILED {result['check']}: measured {result['measured']!r}, "
                  f"threshold {result['threshold']!r}")  # fmt: skip
            for example in result.get("examples", [])[:1]:
                print(f"    e.g. {example['url']}: {example['field']} has no value, the page "
                      f"says {example.get('text')!r}")  # fmt: skip
    item = items[0]
    entry = item["evidence"]["price"][0]
    start, end = entry["span"]
    snapshot = open_snapshot_store(str(out / "snapshots")).get_by_source_ref(item["sourceRef"])
    assert snapshot is not None
    body = snapshot["body"]
    print(f"\n== evidence of the price {item['fields']['price']!r} of {item['fields']['name']!r}")
    print(f"  sourceRef: {item['sourceRef']}")
    print(f"  span: [{start}, {end}) of the stored body, the text {body[start:end]!r}")
    before, after = body[max(0, start - 40) : start], body[end : end + 20]
    print(f"  stored bytes around it: {before!r} [{body[start:end]!r}] {after!r}")


if __name__ == "__main__":
    raise SystemExit(main())
