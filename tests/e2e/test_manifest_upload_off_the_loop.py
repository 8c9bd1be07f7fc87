"""A single-process crawl uploads each seed's manifest to a bucket off its event loop.

The manifest PUTs go through a TCP relay in front of moto's server that holds them
for seconds: the crawl's other seed keeps being fetched meanwhile. An upload that
fails after the retries is what it was on the loop: an ERROR naming the fallback
file that holds the manifest, ``manifest/error`` counted as lost, exit 1.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, scrapy, scrapy_env, wait_for
from tests.support.s3server import Relay
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

pytestmark = pytest.mark.s3

HOLD = 4.0  # seconds each manifest PUT is held by the relay
CHAIN = 24  # pages of the long seed, PAGE_DELAY each: it outlasts a held PUT
PAGE_DELAY = 0.25


def two_seeds(server: Server, tmp: Path) -> Path:
    """Seed ``short``: one page. Seed ``long``: a chain of CHAIN slow pages."""
    server.routes["/solo.html"] = Reply(body="<p>alone</p>")
    for i in range(CHAIN):
        path = "/home.html" if i == 0 else f"/p{i}.html"
        link = f'<a href="p{i + 1}.html">next</a>' if i + 1 < CHAIN else "<p>the end</p>"
        server.routes[path] = Reply(body=link, delay=PAGE_DELAY)
    seeds = tmp / "seeds.txt"
    seeds.write_text(f"short\t{server.url('/solo.html')}\nlong\t{server.url('/home.html')}\n")
    return seeds


def crawl(server: Server, tmp: Path, seeds: Path, *more: str) -> Any:
    return scrapy(
        "crawl", "traverse", "-a", f"seeds={seeds}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_STORE={tmp / 'store'}", "-s", "TRAVERSE_MAX_DEPTH=40",
        "-s", "TRAVERSE_MAX_PAGES=40",
        "-s", f"TRAVERSE_STATS_FILE={tmp / 'stats.json'}", *more, timeout=180,
    )  # fmt: skip


def test_a_slow_manifest_upload_does_not_hold_up_the_crawl(server, tmp_path, s3_server):
    bucket = s3_server.new_bucket()
    held: list[tuple[float, float]] = []
    lock = threading.Lock()

    def hold(data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0]
        if line.startswith(b"PUT ") and f"/{bucket}/m/".encode() in line:
            start = time.monotonic()
            time.sleep(HOLD)
            with lock:
                held.append((start, time.monotonic()))

    relay = Relay(s3_server.port, hold)
    relay.start()
    try:
        seeds = two_seeds(server, tmp_path)
        run = crawl(server, tmp_path, seeds, "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/m",
                    *s3_server.setting_args(relay.endpoint))  # fmt: skip
    finally:
        relay.stop()
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(held) == 2, held  # one PUT per seed's manifest
    first_start, first_end = min(held)
    during = [
        h for h in server.hits if h.path.startswith("/p") and first_start < h.start < first_end
    ]
    # A crawl blocked in the upload would fetch nothing meanwhile (a request or so already
    # sent before it may still arrive); unblocked, it fetches a page every PAGE_DELAY.
    assert len(during) >= 5, (len(during), held)
    written = s3_server.objects(bucket, "m/")
    assert sorted(written) == sorted(source_dir_name(s) + ".json" for s in ("short", "long"))
    long_manifest = json.loads(written[source_dir_name("long") + ".json"])
    assert len(long_manifest["pages"]) == CHAIN
    assert "manifest for seed 'short': s3://" in run.stderr
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["stats"]["manifest/written"] == 2
    assert [s["manifest"] for s in stats["seeds"]] == [
        f"s3://{bucket}/m/{source_dir_name(s)}.json" for s in ("short", "long")
    ]


def test_a_failed_manifest_upload_is_an_error_a_fallback_file_and_exit_1(
    server, tmp_path, s3_server
):
    bucket = s3_server.new_bucket()
    relay = Relay(s3_server.port)
    relay.start()
    seeds = two_seeds(server, tmp_path)
    server.routes["/solo.html"] = lambda _handler: (relay.stop(), Reply(body="<p>alone</p>"))[1]
    run = crawl(server, tmp_path, seeds, "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/m",
                "-s", f"JOBDIR={tmp_path / 'job'}", "-s", "TRAVERSE_S3_RETRY=1",
                *s3_server.setting_args(relay.endpoint))  # fmt: skip
    assert run.returncode == 1, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if "could not write manifest" in line]
    assert len(errors) == 2, run.stderr[-3000:]
    assert f"could not write manifest s3://{bucket}/m/" in errors[0]
    assert "Could not connect to the endpoint URL" in errors[0]
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert stats["stats"]["manifest/error"] == 2
    assert stats["lost"] == 2
    for seed in stats["seeds"]:
        fallback = Path(seed["manifest"])
        assert fallback.parent == tmp_path / "job", seed
        assert f"its content is in {fallback}" in run.stderr
        assert json.loads(fallback.read_text())["pages"]
    assert s3_server.objects(bucket, "m/") == {}


def test_a_second_signal_waits_for_the_uploads_in_flight(server, tmp_path, s3_server):
    bucket = s3_server.new_bucket()
    holding = threading.Event()

    def hold(data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0]
        if line.startswith(b"PUT ") and f"/{bucket}/m/".encode() in line:
            holding.set()
            time.sleep(2.0)

    relay = Relay(s3_server.port, hold)
    relay.start()
    server.routes["/solo.html"] = Reply(body="<p>alone</p>")
    server.routes["/home.html"] = Reply(body='<a href="slow.html">slow</a>')
    server.routes["/slow.html"] = Reply(body="slow", delay=60)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"short\t{server.url('/solo.html')}\nlong\t{server.url('/home.html')}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={seeds}",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
         "-s", f"TRAVERSE_STORE={tmp_path / 'store'}", "-s", "LOGSTATS_INTERVAL=0",
         "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/m", "-s", "DOWNLOAD_TIMEOUT=120",
         "-s", "RETRY_TIMES=0", *s3_server.setting_args(relay.endpoint)],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        wait_for(holding.is_set, "the short seed's manifest upload", timeout=60)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)  # while the upload is held: it is waited for
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        relay.stop()
    assert "Received SIGINT twice" in stderr, stderr[-3000:]
    written = s3_server.objects(bucket, "m/")
    assert sorted(written) == sorted(source_dir_name(s) + ".json" for s in ("short", "long"))
    short = json.loads(written[source_dir_name("short") + ".json"])
    assert [p["url"] for p in short["pages"]] == [server.url("/solo.html")]
    long = json.loads(written[source_dir_name("long") + ".json"])
    assert long["warnings"][-1].startswith("crawl stopped before this seed finished (shutdown)")
    assert "manifest for seed 'long': s3://" in stderr
