"""The README's main job: capture the bundled demo site, replay it offline."""

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
    # It ends by writing the capture's report and printing where it is.
    assert run.stdout.splitlines()[-1] == (
        f"report of the capture (open it in a browser): {tmp_path / 'report.html'}"
    )
    assert "<h1>Crawl report</h1>" in (tmp_path / "report.html").read_text()
    (capture,) = (tmp_path / "manifests-capture").glob("*.json")
    (replay,) = (tmp_path / "manifests-replay").glob("*.json")
    captured, replayed = json.loads(capture.read_text()), json.loads(replay.read_text())
    by_url = {p["url"].split("/", 3)[3]: p for p in captured["pages"]}
    assert by_url["private/stock.html"]["fetch"]["error"]["kind"] == "robots-denied"
    assert by_url["old-catalog.html"]["fetch"]["snapshot"]["redirects"]
    assert by_url["logo.png"]["fetch"]["snapshot"]["contentType"] == "png"
    assert "catalog.html?category=lamps" in by_url
    assert [p["url"] for p in replayed["pages"]] == [p["url"] for p in captured["pages"]]
    served = [p for p in replayed["pages"] if "snapshot" in p["fetch"]]
    assert served and all(p["fetch"]["snapshot"]["fromCache"] for p in served)
