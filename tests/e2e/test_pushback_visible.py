"""An origin slowed down is visible where an operator looks, through ``scrapy crawl``:
the progress lines, the stats (``politeness/backoffs``), the metrics gauge
``traverse_origin_delay_seconds`` while the crawl runs, and ``scrapy report``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_metrics import free_port, scrape
from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env, wait_for
from tests.support.server import Reply, Server


def delays(port: int) -> dict[str, float]:
    return {
        dict(labels)["origin"]: value
        for (name, labels), value in scrape(port).items()
        if name == "traverse_origin_delay_seconds"
    }


def test_a_slowed_origin_shows_in_progress_stats_metrics_and_report(
    server: Server, server2: Server, tmp_path: Path
):
    paths = [f"/p{i}" for i in range(1, 6)]
    server.site({"/": "".join(f'<a href="{p}">{p}</a>' for p in paths)})
    server.site({p: "ok" for p in paths})
    server.routes["/p1"] = server.routes["/p2"] = Reply(429, "busy", content_type="text/plain")
    server2.site({"/": "calm"})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"shop\t{server.url('/')}\ncalm\t{server2.url('/')}\n")
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={seeds}",
            *crawl_args(tmp_path, server.origin, server2.origin),
            "-s", "TRAVERSE_MIN_DELAY=0.05", "-s", "RETRY_TIMES=0", "-s", "TRAVERSE_MAX_DELAY=3",
            "-s", f"TRAVERSE_METRICS_PORT={port}", "-s", "LOGSTATS_INTERVAL=0.5",
            "-s", f"TRAVERSE_STATS_FILE={tmp_path / 'stats.json'}",
        ],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: delays(port).get(server.origin, 0) >= 1.0, "the origin's delay gauge")
        seen = delays(port)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr[-3000:]
    assert server2.origin not in seen  # only origins that push back are shown
    assert "seed shop: " in stderr and ", slowed down: " in stderr
    assert not [line for line in stderr.splitlines() if "seed calm: " in line and "slowed" in line]
    assert f"{server.origin} pushes back (HTTP 429)" in stderr
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["stats"]["politeness/backoffs"] == 2
    report = tmp_path / "report.html"
    done = scrapy("report", str(tmp_path / "manifests"), "-o", str(report))
    assert done.returncode == 0, done.stderr[-3000:]
    html = report.read_text(encoding="utf-8")
    assert "Origins that pushed back" in html
    assert f'<td>{server.origin}</td><td class="n">2</td>' in html
