"""Capture into an S3 bucket against a bare client writing the same objects.

    .venv/bin/python bench/run.py objectstore [--runs 5]

What it measures and how: the comment above ``run``. Needs moto's server mode
(``moto[server]``, in requirements-dev.lock) as the S3-compatible server on loopback.
"""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.capture import writer_cpu_ms_per_page  # noqa: E402
from bench.run import Bench, line, summary  # noqa: E402
from traverse_crawl.snapshots.bucket_writer import IN_FLIGHT  # noqa: E402
from traverse_crawl.storage.bucket import BucketConfig, make_client  # noqa: E402

TARGET_BUCKET_RATIO = 0.8  # capture pages/s >= 0.8x the bare client's objects/s
BUCKET = "bench-capture"


class MotoServer:
    def __init__(self, scratch: Path) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        log = (scratch / "moto.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=1):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("objectstore: moto server did not start") from None
                time.sleep(0.05)

    def cpu_s(self) -> float:
        """The server's CPU seconds so far (user + system, all its threads)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _bare_put(config: BucketConfig, objects: dict[str, bytes], prefix: str) -> tuple[float, float]:
    """Seconds to PUT ``objects`` under ``prefix`` with a plain botocore client and as
    many in flight as the capture's writer keeps (``IN_FLIGHT``), and the client's CPU
    seconds meanwhile."""
    client = make_client(config)
    client.put_object(Bucket=BUCKET, Key=prefix + "warm", Body=b"")  # connect first
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        start, cpu = time.perf_counter(), _own_cpu_s()
        list(
            pool.map(
                lambda item: client.put_object(Bucket=BUCKET, Key=prefix + item[0], Body=item[1]),
                objects.items(),
            )
        )
        return time.perf_counter() - start, _own_cpu_s() - cpu


def _objects(config: BucketConfig, prefix: str) -> dict[str, bytes]:
    client = make_client(config)
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for entry in page.get("Contents", []):
            body = client.get_object(Bucket=BUCKET, Key=entry["Key"])["Body"].read()
            found[entry["Key"][len(prefix) :]] = body
    return found


# Each run is a capture of the whole site into a fresh prefix of one bucket on moto's
# server (a real S3 API over HTTP on loopback), then, right after it, a bare botocore
# client PUTting the very objects that capture wrote (same keys, same bytes, same number
# in flight) to another prefix; runs alternate, so load drift hits both alike. Reported:
# median capture pages/s (Scrapy's elapsed_time_seconds), median bare objects/s, their
# ratio and the per-pair ratios. Every capture is checked to have stored every page.
# The profile beside it, in CPU ms per object (medians): during the capture, moto's
# server, the snapshot writer process (its own log line) and the rest of the crawl
# process; during the bare PUTs, moto's server and the client. Two cores run all of it:
# whatever the capture spends beyond the bare client's share is taken from moto.
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages = bench.site.pages
    moto = MotoServer(bench.scratch)
    config = BucketConfig(endpoint_url=moto.endpoint, region_name="us-east-1",
                          access_key_id="bench", secret_access_key="bench")  # fmt: skip
    try:
        make_client(config).create_bucket(Bucket=BUCKET)
        aws = [
            f"AWS_ENDPOINT_URL={moto.endpoint}", "AWS_REGION_NAME=us-east-1",
            "AWS_ACCESS_KEY_ID=bench", "AWS_SECRET_ACCESS_KEY=bench",
        ]  # fmt: skip
        print(f"\n== capture into a bucket against a bare client: {pages} pages, "
              f"{args.runs} runs ==")  # fmt: skip
        captures, bare_rates, pairs = [], [], []
        profile: dict[str, list[float]] = {
            "capture_moto": [], "capture_writer": [], "capture_crawl": [],
            "bare_moto": [], "bare_client": [],
        }  # fmt: skip
        for i in range(args.warmup + args.runs):
            prefix = f"run-{i}/"
            extra = [f"TRAVERSE_STORE=s3://{BUCKET}/{prefix.rstrip('/')}", *aws]
            moto_before = moto.cpu_s()
            capture = bench.traverse(f"bucket-capture-{i}", mode="capture", extra=extra)
            moto_capture = moto.cpu_s() - moto_before
            bench.check(capture, pages)
            stored = int(capture.stats.get("snapshot/stored", 0))
            if stored != pages:
                print(f"  !! {capture.label}: {stored} snapshots stored for {pages} pages")
            objects = _objects(config, prefix)
            moto_before = moto.cpu_s()
            seconds, client_cpu = _bare_put(config, objects, f"bare-{i}/")
            moto_bare = moto.cpu_s() - moto_before
            rate = len(objects) / seconds if seconds else 0.0
            if i >= args.warmup and objects:
                each = 1000 / len(objects)
                writer = (writer_cpu_ms_per_page([capture], pages) or 0.0) * pages / len(objects)
                profile["capture_moto"].append(moto_capture * each)
                profile["capture_writer"].append(writer)
                profile["capture_crawl"].append(capture.cpu_s * each - writer)
                profile["bare_moto"].append(moto_bare * each)
                profile["bare_client"].append(client_cpu * each)
            print(f"  run {i}: capture {capture.pages_per_s:.1f} pages/s, "
                  f"bare client {rate:.1f} objects/s")  # fmt: skip
            if i >= args.warmup:
                captures.append(capture)
                bare_rates.append(rate)
                pairs.append(capture.pages_per_s / rate if rate else 0.0)
    finally:
        moto.stop()
    out: dict[str, Any] = {"pages": pages, "writers_in_flight": IN_FLIGHT}
    out["capture"] = summary(captures)
    print(line("capture into the bucket", out["capture"]))
    bare = statistics.median(bare_rates)
    out["bare_objects_per_s"] = round(bare, 1)
    out["ratio"] = round(out["capture"]["pages_per_s"] / bare, 3) if bare else 0.0
    out["pair_ratios"] = [round(p, 3) for p in pairs]
    out["target"] = TARGET_BUCKET_RATIO
    out["pass"] = out["ratio"] >= TARGET_BUCKET_RATIO
    print(f"  bare client: {bare:.1f} objects/s; ratio {out['ratio']:.3f} "
          f"(target >= {TARGET_BUCKET_RATIO}) pairs {out['pair_ratios']}")  # fmt: skip
    out["cpu_ms_per_object"] = {
        name: round(statistics.median(values), 2) for name, values in profile.items() if values
    }
    cpu = out["cpu_ms_per_object"]
    if cpu:
        print(
            f"  CPU ms per object: capture: moto {cpu['capture_moto']:.2f}, writer "
            f"{cpu['capture_writer']:.2f}, crawl {cpu['capture_crawl']:.2f}; bare: moto "
            f"{cpu['bare_moto']:.2f}, client {cpu['bare_client']:.2f}"
        )
    return out
