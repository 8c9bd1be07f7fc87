"""The README's main job: capture the bundled demo site, replay it offline, then show
extracted values, the check that fails on purpose and one value's stored bytes."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import REPO, scrapy_env


def test_demo_captures_then_replays_with_the_server_stopped(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "traverse_crawl.demo", str(tmp_path)],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "replay reproduces the capture's sourceRefs: True" in run.stdout
    # It writes the capture's report and prints where it is.
    assert (
        f"report of the capture (open it in a browser): {tmp_path / 'report.html'}"
    ) in run.stdout.splitlines()
    assert "<h1>Crawl report</h1>" in (tmp_path / "report.html").read_text()
    # Then extracted values, the one check that fails on purpose, and one value's evidence:
    # its sourceRef, its span, and the stored bytes there.
    tail = run.stdout.split("\n== extracted: ", 1)[1]
    assert "product: name='Brass lamp', price=49.0" in tail
    assert "product: name='Hemp rope, 10 m'  (missing: price)" in tail
    assert "checks: 5 passed, 1 failed on purpose" in tail
    assert tail.count("FAILED ") == 1 and "FAILED items.product.coverage.price" in tail
    assert "price has no value, the page says 'ask us'" in tail
    last = run.stdout.splitlines()[-3:]
    assert last[0].startswith("  sourceRef: traverse-snapshot:demo%3A%3A")
    assert last[1].endswith("of the stored body, the text '$49.00'")
    assert last[2].startswith("  stored bytes around it: ") and "['$49.00']" in last[2]
    (capture,) = [
        p for p in (tmp_path / "manifests-capture").glob("*.json") if ".checks." not in p.name
    ]
    (replay,) = [
        p for p in (tmp_path / "manifests-replay").glob("*.json") if ".checks." not in p.name
    ]
    captured, replayed = json.loads(capture.read_text()), json.loads(replay.read_text())
    by_url = {p["url"].split("/", 3)[3]: p for p in captured["pages"]}
    assert by_url["private/stock.html"]["fetch"]["error"]["kind"] == "robots-denied"
    assert by_url["old-catalog.html"]["fetch"]["snapshot"]["redirects"]
    assert by_url["logo.png"]["fetch"]["snapshot"]["contentType"] == "png"
    assert "catalog.html?category=lamps" in by_url
    assert [p["url"] for p in replayed["pages"]] == [p["url"] for p in captured["pages"]]
    served = [p for p in replayed["pages"] if "snapshot" in p["fetch"]]
    assert served and all(p["fetch"]["snapshot"]["fromCache"] for p in served)
