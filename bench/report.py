"""Bench: ``scrapy report`` on a synthetic 5,000-page manifest (target < 5 s).

    .venv/bin/python bench/report.py [--pages 5000] [--runs 3] [--out DIR]

What it measures and how: the comment above ``main``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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

from traverse_crawl.reports import html as reporthtml  # noqa: E402
from traverse_crawl.reports.model import build_seed  # noqa: E402

ORIGIN = "https://bench.test"
ERRORS = (("http-error", 404), ("http-error", 500), ("timeout", None), ("robots-denied", None))


def synthetic_manifest(pages: int, seed: int = 16) -> dict[str, Any]:
    """A BFS crawl of a tree-shaped site: fan-out 12, 40, 9, then the rest."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    warnings: list[str] = []
    queue: list[tuple[str, int, str | None]] = [(ORIGIN + "/", 0, None)]
    fanout = (12, 40, 9, 4, 0)
    i = 0
    while i < len(queue) and len(out) < pages:
        url, depth, parent = queue[i]
        i += 1
        page: dict[str, Any] = {"id": "bench::" + url, "url": url, "depth": depth}
        if parent is not None:
            page["discoveredFrom"] = parent
        if depth > 0 and rng.random() < 0.03:
            kind, status = rng.choice(ERRORS)
            error: dict[str, Any] = {"kind": kind, "message": f"{kind} from {url}"}
            if status is not None:
                error["status"] = status
            page["fetch"] = {"error": error}
            warnings.append(f"[depth {depth}] {url}: retry 1/2 after {kind}")
        else:
            body_hash = hashlib.sha256(url.encode()).hexdigest()
            page["fetch"] = {
                "snapshot": {
                    "sourceId": page["id"], "url": url, "fetchedAt": "2026-11-30T12:00:00.000Z",
                    "status": 200, "contentType": "html", "bodyHash": body_hash,
                }
            }  # fmt: skip
            page["sourceRef"] = f"traverse-snapshot:{body_hash}"
            page["bodySize"] = rng.randint(2_000, 400_000)
            for k in range(fanout[min(depth, len(fanout) - 1)]):
                queue.append((f"{url.rstrip('/')}/p{k}", depth + 1, url))
        out.append(page)
    return {
        "seed": {"id": "bench", "url": ORIGIN + "/"},
        "mode": "capture",
        "pages": out,
        "warnings": warnings,
        "truncated": len(queue) > len(out),
    }


# Writes one manifest of a plausible site (a seed, section pages, listings, leaves;
# depth up to 4; about 3 % failed pages of several kinds; a warning for each
# failure; ``discoveredFrom`` and ``bodySize`` on every page, as a crawl of this
# version writes them), then times ``scrapy report`` on it — the whole process, as
# a user waits for it, interpreter start-up and imports included — and the
# in-process build + render alone. Prints the medians and keeps the last report
# (``DIR/report.html``) to look at.
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    manifest = synthetic_manifest(args.pages)
    path = out / "bench.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    report = out / "report.html"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    command = [sys.executable, "-m", "scrapy", "report", str(path), "-o", str(report)]
    command += ["-s", f"TRAVERSE_STORE={out / 'no-store'}"]
    whole, inner = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)
        whole.append(time.perf_counter() - start)
        start = time.perf_counter()
        reporthtml.page([build_seed(manifest, str(path))], [str(path)], None)
        inner.append(time.perf_counter() - start)
    size = report.stat().st_size
    print(f"pages: {len(manifest['pages'])}, failed: {len(manifest['warnings'])}")
    print(f"scrapy report, whole process: median {statistics.median(whole):.2f} s {whole}")
    print(f"build + render in process:    median {statistics.median(inner):.3f} s")
    print(f"report: {report} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
