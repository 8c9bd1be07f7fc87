"""The main job: crawl the bundled demo site, then replay it with the server stopped.

Run from the project directory: ``python -m traverse_crawl.demo [OUTPUT_DIR]``.
Both crawls are real ``scrapy crawl traverse`` runs; the replay opens no socket.
Last, ``scrapy report`` writes the capture's HTML report (docs/reports.md) to
``OUTPUT_DIR/report.html`` and the path is printed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from traverse_crawl.demo.server import DemoServer


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
        "-s", "LOG_LEVEL=WARNING",
        "-O", str(out / f"pages-{mode}.jsonl"),
    ]  # fmt: skip
    subprocess.run(command, check=True)
    (manifest,) = manifests.glob("*.json")
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
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
