"""The fault campaign: many distributed crawls under faults, each checked against the
single-process crawl of the same site (docs/reliability.md).

    .venv/bin/python bench/faults.py                          # 50 crawls, seed 1
    nice -n 10 .venv/bin/python bench/faults.py --crawls 60 --seed 7 --json faults.json
    .venv/bin/python bench/faults.py --seed 7 --only 12       # crawl 12 of that campaign again

Each crawl runs ``--workers`` ``scrapy crawl traverse`` workers of one Redis crawl
(a real redis-server with AOF, reached through a fault proxy), with the snapshot store,
the manifests and the items files in an ``s3://`` bucket (moto's server mode, reached
through an HTTP fault proxy), and each worker's system temporary directory (its page
spool, a manifest or items file on its way up) on a small tmpfs of its own. While it
runs, the crawl's fault plan fires: SIGKILL of a worker's process group (restarted
after a while, as a supervisor would), SIGSTOP/SIGCONT, the bucket cut, answering 500,
slow or blackholed, the Redis connections cut or blackholed, redis-server paused or
killed and restarted, a worker's temporary disk filled. Each fault fires once the site
has answered a given number of page requests, so it lands while the crawl runs however
loaded the machine is.

Every crawl's plan derives from ``--seed`` and the crawl's index alone and is printed
before it runs: ``--seed S --only I`` runs crawl I of campaign S again with the same
faults at the same points of progress. Exit status 0 when every invariant held, 1 when
one failed, 2 when the campaign could not start.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.cli import scrapy_env  # noqa: E402
from tests.support.fault_proxy import FaultProxy  # noqa: E402
from tests.support.jobdir_helpers import comparable  # noqa: E402
from tests.support.redisserver import RedisServer  # noqa: E402
from tests.support.s3server import S3Server  # noqa: E402
from tests.support.server import Reply, Server  # noqa: E402
from traverse_crawl.snapshots.model import body_bytes  # noqa: E402
from traverse_crawl.snapshots.store import open_snapshot_store  # noqa: E402

ORIGINS = 3  # seeds, one origin each
PER_ORIGIN = 6  # depth-1 pages of each origin; each has a depth-2 page: 1 + 6 + 6 = 13 pages
MIN_DELAY = 0.3  # seconds, TRAVERSE_MIN_DELAY: a crawl takes 10-20 s
PAGE_DELAY = 0.03  # seconds the site takes to answer a page
LEASE = 4  # seconds, TRAVERSE_LEASE_TIMEOUT: a dead or stopped worker's pages come back soon
TMPFS_SIZE = "8m"  # each worker's temporary directory
CRAWL_TIMEOUT = 300.0  # seconds: a crawl that takes longer is a hang (an invariant failure)
FAULTS_PER_CRAWL = (4, 6)
WORKER_KINDS = ("worker-kill", "worker-stop", "disk-full")
KINDS = (
    "worker-kill", "worker-stop", "bucket-cut", "bucket-500", "bucket-slow",
    "bucket-blackhole", "redis-cut", "redis-blackhole", "redis-pause", "redis-restart",
    "disk-full",
)  # fmt: skip
EXTRACTION = """\
# The fault campaign's extraction file: one item per page, four fields.
[[types]]
name = "page"
require = "css:h1"
[types.fields]
title = "css:title::text"
heading = "css:h1::text"
number = { selector = "css:h1::text", re = 'Page (\\d+)', type = "integer" }
links = { selector = "css:a::attr(href)", many = true, url = true }
"""
RESTART_AFTER_EXIT_2 = 1.0  # seconds before a worker that exited 2 is started again
UNREACHABLE = re.compile(
    r"(REDIS_URL: cannot reach Redis|(TRAVERSE_STORE|TRAVERSE_MANIFEST_DIR|TRAVERSE_ITEMS_DIR): "
    r"s3://\S+: cannot reach)"
)
FETCHED_AT = re.compile(r"fetchedAt=[^&\"]*")


# -- the plan -----------------------------------------------------------------------------


@dataclass
class Fault:
    kind: str
    at: int  # fires once the site has answered this many page requests
    seconds: float  # how long it lasts (a killed worker: until it is started again)
    worker: int = 0  # the worker slot, for worker faults
    delay: float = 0.0  # bucket-slow: seconds each request waits
    state: str = "pending"  # pending, injected, skipped (the crawl was over or the target gone)

    def shown(self) -> str:
        what = f"@{self.at} {self.kind}"
        if self.kind in WORKER_KINDS:
            what += f" w{self.worker}"
        if self.kind == "worker-kill":
            return f"{what} (restarted after {self.seconds:.1f} s)"
        if self.kind == "bucket-slow":
            what += f" +{self.delay:.2f} s/request"
        return f"{what} for {self.seconds:.1f} s"


def plan(seed: int, index: int, workers: int, pages: int, kinds: tuple[str, ...]) -> list[Fault]:
    """Crawl ``index``'s faults, from ``seed`` and ``index`` alone."""
    rng = random.Random(f"traverse-faults:{seed}:{index}")
    count = rng.randint(*FAULTS_PER_CRAWL)
    faults = []
    for _ in range(count):
        kind = rng.choice(kinds)
        fault = Fault(kind, at=rng.randint(2, pages - 6), seconds=round(rng.uniform(1.0, 4.0), 1))
        if kind in WORKER_KINDS:
            fault.worker = rng.randrange(workers)
        if kind == "worker-kill":
            fault.seconds = round(rng.uniform(0.3, 3.0), 1)
        if kind == "disk-full":  # late: while seeds finish and their files go up through it
            fault.at = rng.randint(pages - 10, pages - 2)
            fault.seconds = round(rng.uniform(2.0, 5.0), 1)
        if kind == "bucket-slow":
            fault.delay = round(rng.uniform(0.1, 0.6), 2)
        faults.append(fault)
    faults.sort(key=lambda f: f.at)
    return faults


# -- the site -----------------------------------------------------------------------------


def build_site(server: Server, name: str) -> None:
    """Home → PER_ORIGIN pages (depth 1, linking to each other) → one page each (depth 2)
    → one more each, past TRAVERSE_MAX_DEPTH (never fetched)."""

    def page(title: str, heading: str, links: list[str]) -> Reply:
        anchors = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        body = (f"<html><head><title>{title}</title></head><body><h1>{heading}</h1>"
                f"<p>{name}: {title}</p><nav>{anchors}</nav></body></html>")  # fmt: skip
        return Reply(body=body, delay=PAGE_DELAY)

    server.routes["/"] = page(f"{name} home", "Home", [f"/a/{i}" for i in range(PER_ORIGIN)])
    for i in range(PER_ORIGIN):
        links = [f"/a/{(i + 1) % PER_ORIGIN}", f"/b/{i}", "/", "mailto:x@example.org"]
        server.routes[f"/a/{i}"] = page(f"{name} a{i}", f"Page {i}", links)
        server.routes[f"/b/{i}"] = page(f"{name} b{i}", f"Page {100 + i}", [f"/c/{i}", "/"])
        server.routes[f"/c/{i}"] = page(f"{name} c{i}", f"Page {200 + i}", ["/"])


def page_hits(servers: list[Server]) -> int:
    return sum(1 for s in servers for path in s.paths() if path != "/robots.txt")


# -- the services -------------------------------------------------------------------------


def mount_tmpfs(path: Path) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(path)],
        capture_output=True, check=False,
    )  # fmt: skip
    return done.returncode == 0


def fill(path: Path) -> Path:
    """Fill the filesystem of ``path`` with one file; returns it."""
    filler = path / f".filler-{os.getpid()}"
    block = b"\0" * (1 << 20)
    with contextlib.suppress(OSError), filler.open("wb", buffering=0) as out:
        size = len(block)
        while size >= 512:
            try:
                out.write(block[:size])
            except OSError:
                size //= 4
    return filler


@dataclass
class Run:
    """One worker process: slot, how it ended, what it said."""

    slot: int
    number: int
    proc: subprocess.Popen[bytes]
    stats: Path
    stderr: Path
    killed: bool = False
    status: int | None = None


@dataclass
class Outcome:
    index: int
    faults: list[Fault]
    runs: list[Run] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    lost: int = 0
    seconds: float = 0.0
    refused: int = 0  # late results Redis refused (leases taken over): pages fetched again
    no_space: int = 0  # worker runs that met the full disk (a "No space left" line)


class Campaign:
    """The services of a campaign, started once; ``crawl(index)`` runs one crawl."""

    def __init__(self, root: Path, workers: int, seed: int, log: Callable[[str], None]) -> None:
        self.root = root
        self.workers = workers
        self.seed = seed
        self.log = log
        self.stack = contextlib.ExitStack()
        self.servers: list[Server] = []
        self.mounts: list[Path] = []
        self.tmpfs = False

    # services

    def start(self) -> None:
        for i in range(ORIGINS):
            server = Server()
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.stack.callback(server.server_close)
            self.stack.callback(server.shutdown)
            build_site(server, f"site{i}")
            self.servers.append(server)
        self.pages = ORIGINS * (1 + 2 * PER_ORIGIN)
        self.redis = RedisServer(self.root / "redis", None, "--appendonly", "yes",
                                 "--appendfsync", "always")  # fmt: skip
        self.redis.start()
        self.stack.callback(self.redis.stop)
        self.redis_proxy = FaultProxy(self.redis.port)
        self.redis_proxy.start()
        self.stack.callback(self.redis_proxy.stop)
        self.s3 = S3Server(self.root / "moto")
        self.s3.start()
        self.stack.callback(self.s3.stop)
        self.s3_proxy = FaultProxy(self.s3.port, http=True)
        self.s3_proxy.start()
        self.stack.callback(self.s3_proxy.stop)
        self.extraction = self.root / "extract.toml"
        self.extraction.write_text(EXTRACTION, encoding="utf-8")
        self.seeds = self.root / "seeds.txt"
        self.seeds.write_text(
            "".join(f"site{i}\t{s.url('/')}\n" for i, s in enumerate(self.servers))
        )
        self.tmpfs = True
        for slot in range(self.workers):
            mount = self.root / f"tmp{slot}"
            if not mount_tmpfs(mount):
                self.tmpfs = False
                break
            self.mounts.append(mount)
            self.stack.callback(subprocess.run, ["umount", "-l", str(mount)], check=False)
        if not self.tmpfs:
            self.log("no tmpfs could be mounted (mounting needs root): no disk-full faults")
            self.mounts = []
            for slot in range(self.workers):
                (self.root / f"tmp{slot}").mkdir(exist_ok=True)
                self.mounts.append(self.root / f"tmp{slot}")
        self.kinds = KINDS if self.tmpfs else tuple(k for k in KINDS if k != "disk-full")
        self.reference = self.single_process()

    def close(self) -> None:
        self.stack.close()

    def command(self, home: Path, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"seeds={self.seeds}",
            "-s", f"TRAVERSE_EGRESS_ALLOW={','.join(s.origin for s in self.servers)}",
            "-s", f"TRAVERSE_MIN_DELAY={MIN_DELAY}", "-s", "TRAVERSE_MAX_DEPTH=2",
            "-s", "TRAVERSE_MAX_PAGES=100", "-s", f"TRAVERSE_EXTRACT={self.extraction}",
            "-s", "LOGSTATS_INTERVAL=0", "-s", "CONCURRENT_REQUESTS=8",
            "-s", f"TRAVERSE_STATS_FILE={home / 'stats.json'}", *extra,
        ]  # fmt: skip

    def single_process(self) -> dict[str, Any]:
        """The single-process crawl's manifests and items files, on local disk."""
        home = self.root / "reference"
        home.mkdir()
        cmd = self.command(
            home, "-s", f"TRAVERSE_STORE={home / 'store'}",
            "-s", f"TRAVERSE_MANIFEST_DIR={home / 'manifests'}",
            "-s", f"TRAVERSE_ITEMS_DIR={home / 'items'}",
        )  # fmt: skip
        env = {**scrapy_env(), "SCRAPY_SETTINGS_MODULE": "traverse_crawl.settings"}
        done = subprocess.run(cmd, cwd=home, env=env, capture_output=True, text=True,
                              timeout=300, check=False)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"the single-process crawl failed ({done.returncode}):\n"
                             f"{done.stderr[-3000:]}")  # fmt: skip
        manifests = {p.name: comparable(json.loads(p.read_text(encoding="utf-8")))
                     for p in sorted((home / "manifests").glob("*.json"))}  # fmt: skip
        items = {p.name: masked_items(p.read_bytes())
                 for p in sorted((home / "items").glob("*.jsonl"))}  # fmt: skip
        pages = sum(len(m["pages"]) for m in manifests.values())
        if len(manifests) != ORIGINS or pages != self.pages:
            raise SystemExit(f"the single-process crawl recorded {pages} page(s) in "
                             f"{len(manifests)} manifest(s); expected {self.pages}")  # fmt: skip
        for server in self.servers:
            with server.lock:
                server.hits.clear()
                server.started.clear()
        return {"manifests": manifests, "items": items}

    # one crawl

    def crawl(self, index: int, faults: list[Fault]) -> Outcome:
        outcome = Outcome(index, faults)
        bucket = f"faults-{index}"
        client = self.s3.client()
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(Bucket=bucket)
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        crawl_id = f"faults-{self.seed}-{index}-{os.getpid()}"
        for server in self.servers:
            with server.lock:
                server.hits.clear()
                server.started.clear()
        for mount in self.mounts:
            for entry in mount.iterdir():
                (shutil.rmtree if entry.is_dir() else os.unlink)(entry)
        crawl_dir = self.root / f"crawl{index}"
        shared = [
            "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
            "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
            "-s", f"TRAVERSE_ITEMS_DIR=s3://{bucket}/items",
            "-s", f"REDIS_URL={self.redis_proxy.redis_url}", "-s", f"TRAVERSE_CRAWL_ID={crawl_id}",
            "-s", f"TRAVERSE_LEASE_TIMEOUT={LEASE}", "-s", "TRAVERSE_IDLE_TIMEOUT=20",
            *self.s3.setting_args(self.s3_proxy.endpoint),
        ]  # fmt: skip
        current: dict[int, Run] = {}
        restarts: dict[int, float] = {}  # slot -> when to start it again
        timers: list[threading.Timer] = []
        lock = threading.Lock()

        def start_worker(slot: int) -> None:
            number = sum(1 for r in outcome.runs if r.slot == slot)
            home = crawl_dir / f"w{slot}-{number}"
            home.mkdir(parents=True)
            err = home / "stderr.txt"
            env = {**scrapy_env(), "SCRAPY_SETTINGS_MODULE": "traverse_crawl.settings",
                   "TMPDIR": str(self.mounts[slot])}  # fmt: skip
            with err.open("wb") as stderr:
                proc = subprocess.Popen(
                    self.command(home, *shared), cwd=home, env=env, stdout=subprocess.DEVNULL,
                    stderr=stderr, start_new_session=True,
                )  # fmt: skip
            run = Run(slot, number, proc, home / "stats.json", err)
            outcome.runs.append(run)
            current[slot] = run

        def later(seconds: float, action: Callable[[], None]) -> None:
            timer = threading.Timer(seconds, action)
            timer.daemon = True
            timers.append(timer)
            timer.start()

        def signal_group(run: Run, sig: int) -> None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(run.proc.pid, sig)

        redis_down = threading.Event()

        def inject(fault: Fault) -> bool:
            kind = fault.kind
            run = current.get(fault.worker) if kind in WORKER_KINDS else None
            if kind in WORKER_KINDS and (run is None or run.proc.poll() is not None):
                return False  # the worker is down or has finished
            if kind == "worker-kill":
                assert run is not None
                run.killed = True
                signal_group(run, signal.SIGKILL)
                restarts[fault.worker] = time.monotonic() + fault.seconds
                del current[fault.worker]
            elif kind == "worker-stop":
                assert run is not None
                signal_group(run, signal.SIGSTOP)
                later(fault.seconds, functools.partial(signal_group, run, signal.SIGCONT))
            elif kind == "disk-full":
                if not self.tmpfs:
                    return False
                filler = fill(self.mounts[fault.worker])
                later(fault.seconds, lambda: filler.unlink(missing_ok=True))
            elif kind.startswith("bucket-"):
                how = {"bucket-500": "error"}.get(kind, kind.removeprefix("bucket-"))
                self.s3_proxy.fault(how, fault.seconds, fault.delay)
            elif kind in ("redis-cut", "redis-blackhole"):
                self.redis_proxy.fault(kind.removeprefix("redis-"), fault.seconds)
            elif kind in ("redis-pause", "redis-restart"):
                if redis_down.is_set() or self.redis.process is None:
                    return False
                if kind == "redis-pause":
                    pid = self.redis.process.pid
                    os.kill(pid, signal.SIGSTOP)
                    later(fault.seconds, lambda: os.kill(pid, signal.SIGCONT))
                else:
                    redis_down.set()
                    self.redis.stop()  # SIGKILL: AOF with appendfsync always keeps what was acked

                    def back() -> None:
                        with lock:
                            if redis_down.is_set():
                                self.redis.start()
                                redis_down.clear()

                    later(fault.seconds, back)
            return True

        began = time.monotonic()
        self.log(f"crawl {index:3d}  plan: " + "; ".join(f.shown() for f in faults))
        for slot in range(self.workers):
            start_worker(slot)
        pending = list(faults)
        try:
            while True:
                now = time.monotonic()
                if now - began > CRAWL_TIMEOUT:
                    outcome.failures.append(f"hang: the crawl was still running after "
                                            f"{CRAWL_TIMEOUT:.0f} s")  # fmt: skip
                    break
                hits = page_hits(self.servers)
                alive = any(r.proc.poll() is None for r in current.values())
                with lock:
                    while pending and pending[0].at <= hits and (alive or restarts):
                        fault = pending.pop(0)
                        fault.state = "injected" if inject(fault) else "skipped"
                for slot, run in list(current.items()):
                    # A worker that could not reach a service at start (exit 2, during a
                    # fault) is started again, as a supervisor restarts a failed unit.
                    if run.proc.poll() == 2 and slot not in restarts and run.number < 8:
                        restarts[slot] = now + RESTART_AFTER_EXIT_2
                for slot, when in list(restarts.items()):
                    if now >= when:
                        del restarts[slot]
                        start_worker(slot)
                alive = any(r.proc.poll() is None for r in current.values())
                if not alive and not restarts:
                    break
                time.sleep(0.02)
        finally:
            for fault in pending:
                fault.state = "skipped"
            for timer in timers:  # every fault ends now: heal, wake, start Redis again
                timer.cancel()
                with contextlib.suppress(Exception):
                    timer.function(*timer.args, **timer.kwargs)
            self.redis_proxy.heal()
            self.s3_proxy.heal()
            for run in outcome.runs:
                if run.proc.poll() is None:
                    signal_group(run, signal.SIGCONT)
                    signal_group(run, signal.SIGKILL)
                    run.killed = True
                run.proc.wait()
                # whatever the worker started and left behind (none should be)
                signal_group(run, signal.SIGKILL)
                run.status = run.proc.returncode
        outcome.seconds = time.monotonic() - began
        self.check(outcome, bucket)
        if outcome.failures:  # the workers' logs outlive the campaign's directory
            kept = (
                Path(tempfile.gettempdir()) / f"traverse-faults-s{self.seed}-c{index}-{os.getpid()}"
            )
            shutil.copytree(crawl_dir, kept, dirs_exist_ok=True)
            outcome.failures.append(f"the workers' stderr and stats files: {kept}")
        return outcome

    # the invariants

    def check(self, outcome: Outcome, bucket: str) -> None:
        fail = outcome.failures.append
        for run in outcome.runs:
            if run.killed:
                continue
            name = f"worker {run.slot} (run {run.number})"
            err = run.stderr.read_text(encoding="utf-8", errors="replace")
            stats: dict[str, Any] | None = None
            with contextlib.suppress(OSError, ValueError):
                stats = json.loads(run.stats.read_text(encoding="utf-8"))
            lost = int(stats.get("lost", 0)) if stats else 0
            outcome.lost += lost
            if stats:
                outcome.refused += int(stats["stats"].get("distributed/refused", 0))
            said = "could not be written for good: exit status 1" in err
            outcome.no_space += "No space left on device" in err
            redis_lost = "ERROR: REDIS_URL:" in err
            if "Traceback" in err:
                fail(f"{name}: a traceback on stderr: {exception(err)}")
            if run.status == 0:
                if lost or said:
                    fail(f"{name}: exit 0, but {lost} result(s) lost")
            elif run.status == 1:
                if not (lost and said) and not redis_lost:
                    fail(f"{name}: exit 1 with nothing said lost: {tail(err, 'ERROR')}")
            elif run.status == 2:
                # Documented for a service not reachable at start: one line naming the
                # setting, nothing requested.
                errors = [ln for ln in err.splitlines() if "error:" in ln or "ERROR:" in ln]
                if len(errors) != 1 or not UNREACHABLE.search(errors[0]):
                    fail(f"{name}: exit 2 without one line naming the service: "
                         f"{tail(err, 'rror')}")  # fmt: skip
            else:
                fail(f"{name}: exit status {run.status}: {tail(err, 'ERROR')}")
            if stats is not None and run.status == 2:
                fail(f"{name}: exit 2 after the crawl ran (a stats file was written)")
            if stats is None and run.status in (0, 1):
                fail(f"{name}: exit {run.status} and no stats file")
        client = self.s3.client()
        found = objects(client, bucket, "manifests/")
        manifests = {k: json.loads(v) for k, v in found.items() if k.endswith(".json")}
        expected = self.reference["manifests"]
        if sorted(manifests) != sorted(expected):
            fail(f"manifests: {sorted(manifests)} in the bucket, expected {sorted(expected)}")
        for name, manifest in manifests.items():
            if name in expected and comparable(manifest) != expected[name]:
                fail(f"manifest {name}: {difference(comparable(manifest), expected[name])}")
        versions: collections.Counter[str] = collections.Counter()
        for page in client.get_paginator("list_object_versions").paginate(
            Bucket=bucket, Prefix="manifests/"
        ):
            versions.update(entry["Key"] for entry in page.get("Versions", []))
        for key, count in sorted(versions.items()):
            if count != 1:
                fail(f"{key}: written {count} times (once expected)")
        refs: set[str] = set()
        urls: collections.Counter[str] = collections.Counter()
        store = open_snapshot_store(f"s3://{bucket}/store", self.s3.settings())
        for name, manifest in sorted(manifests.items()):
            ids = collections.Counter(page["id"] for page in manifest["pages"])
            for page_id, count in ids.items():
                if count > 1:
                    fail(f"manifest {name}: page {page_id} recorded {count} times")
            urls.update(page["url"] for page in manifest["pages"])
            for page in manifest["pages"]:
                ref = page.get("sourceRef")
                if ref is None:
                    continue
                refs.add(ref)
                snapshot = store.get_by_source_ref(ref)
                wanted = page["fetch"].get("snapshot", {}).get("bodyHash")
                if snapshot is None:
                    fail(f"{name}: {page['url']}: its sourceRef resolves to nothing")
                elif hashlib.sha256(body_bytes(snapshot)).hexdigest() != wanted:
                    fail(f"{name}: {page['url']}: stored bytes do not hash to its bodyHash")
        for url, count in urls.items():
            if count > 1:
                fail(f"{url}: recorded {count} times across manifests")
        items = {k: v for k, v in objects(client, bucket, "items/").items() if k.endswith(".jsonl")}
        wanted_items = self.reference["items"]
        if sorted(items) != sorted(wanted_items):
            fail(f"items files: {sorted(items)} in the bucket, expected {sorted(wanted_items)}")
        for name, data in sorted(items.items()):
            if name in wanted_items and masked_items(data) != wanted_items[name]:
                fail(f"items file {name}: {difference(masked_items(data), wanted_items[name])}")
            for line in data.splitlines():
                ref = json.loads(line).get("sourceRef")
                if ref not in refs:
                    fail(f"items file {name}: sourceRef {ref} is no page's of the manifests")
                    break


def objects(client: Any, bucket: str, prefix: str) -> dict[str, bytes]:
    found = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            body = client.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
            found[entry["Key"][len(prefix) :]] = body
    return found


def masked_items(data: bytes) -> list[str]:
    """An items file's lines, each sourceRef's fetchedAt masked (it differs between runs)."""
    return [FETCHED_AT.sub("fetchedAt=*", line) for line in data.decode("utf-8").splitlines()]


def difference(found: Any, expected: Any) -> str:
    """Where two manifests (or items files) part, in a line."""
    if isinstance(found, dict) and isinstance(expected, dict):
        for key in expected:
            if found.get(key) != expected[key]:
                return f"{key}: {difference(found.get(key), expected[key])}"
        return "extra keys"
    if isinstance(found, list) and isinstance(expected, list):
        for i, (a, b) in enumerate(zip(found, expected, strict=False)):
            if a != b:
                return f"[{i}] {str(a)[:300]} != expected {str(b)[:300]}"
        return f"{len(found)} entries, expected {len(expected)}"
    return f"{str(found)[:300]} != expected {str(expected)[:300]}"


def exception(text: str) -> str:
    """The exception line of the first traceback in ``text``, and where it was raised."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Traceback" in line)
    where = ""
    for line in lines[start + 1 :]:
        if line.startswith("  File "):
            where = line.strip()
        elif not line.startswith(" "):
            return f"{line[:300]} ({where[:200]})"
    return lines[start][:300]


def tail(text: str, marker: str) -> str:
    lines = [line for line in text.splitlines() if marker in line]
    lines = lines or text.strip().splitlines()[-1:] or ["(nothing)"]
    return lines[0][:400]


# -- the command --------------------------------------------------------------------------


def line(outcome: Outcome) -> str:
    injected = collections.Counter(f.kind for f in outcome.faults if f.state == "injected")
    skipped = sum(1 for f in outcome.faults if f.state == "skipped")
    faults = ", ".join(f"{k} {n}" for k, n in sorted(injected.items())) or "none"
    statuses = collections.Counter(
        "killed" if r.killed else f"exit {r.status}" for r in outcome.runs
    )
    runs = ", ".join(f"{k} x{n}" for k, n in sorted(statuses.items()))
    verdict = "ok" if not outcome.failures else "FAILED: " + " | ".join(outcome.failures)
    more = f" ({skipped} not injected: the crawl was over or the worker down)" if skipped else ""
    return (f"crawl {outcome.index:3d}  {outcome.seconds:5.1f} s  faults: {faults}{more}  "
            f"runs: {runs}  refused {outcome.refused}, full disk met {outcome.no_space}, "
            f"lost {outcome.lost}  "
            f"invariants: {verdict}")  # fmt: skip


def summary(outcomes: list[Outcome], seed: int, seconds: float) -> dict[str, Any]:
    by_kind: collections.Counter[str] = collections.Counter()
    exits = collections.Counter(
        "killed" if r.killed else str(r.status) for o in outcomes for r in o.runs
    )
    seconds_each = sorted(o.seconds for o in outcomes) or [0.0]
    for outcome in outcomes:
        by_kind.update(f.kind for f in outcome.faults if f.state == "injected")
    return {
        "seed": seed,
        "crawls": len(outcomes),
        "faults": sum(by_kind.values()),
        "faults_by_kind": dict(sorted(by_kind.items())),
        "not_injected": sum(1 for o in outcomes for f in o.faults if f.state == "skipped"),
        "worker_runs": sum(len(o.runs) for o in outcomes),
        "worker_exits": dict(sorted(exits.items())),
        "refused": sum(o.refused for o in outcomes),
        "full_disk_met": sum(o.no_space for o in outcomes),
        "lost": sum(o.lost for o in outcomes),
        "failed_crawls": [o.index for o in outcomes if o.failures],
        "failures": {str(o.index): o.failures for o in outcomes if o.failures},
        "crawl_seconds": {
            "min": round(seconds_each[0], 1),
            "median": round(seconds_each[len(seconds_each) // 2], 1),
            "max": round(seconds_each[-1], 1),
        },
        "seconds": round(seconds, 1),
        "plans": {str(o.index): [f.shown() + f" [{f.state}]" for f in o.faults] for o in outcomes},
    }


@contextlib.contextmanager
def campaign_root(keep: bool) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="traverse-faults-"))
    try:
        yield root
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)


def run_campaign(
    seed: int,
    crawls: int,
    only: list[int] | None = None,
    workers: int = 3,
    keep: bool = False,
    log: Callable[[str], None] = lambda text: print(text, flush=True),
) -> dict[str, Any]:
    """Run the campaign (or the crawls ``only`` names); its summary."""
    began = time.monotonic()
    outcomes = []
    with campaign_root(keep) as root:
        campaign = Campaign(root, workers, seed, log)
        try:
            campaign.start()
            log(f"seed {seed}: {crawls} crawl(s) of {campaign.pages} pages, {workers} workers; "
                f"fault kinds: {', '.join(campaign.kinds)}; in {root}")  # fmt: skip
            for index in only if only is not None else range(crawls):
                faults = plan(seed, index, workers, campaign.pages, campaign.kinds)
                outcome = campaign.crawl(index, faults)
                outcomes.append(outcome)
                log(line(outcome))
        finally:
            campaign.close()
    return summary(outcomes, seed, time.monotonic() - began)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--crawls", type=int, default=50, help="crawls to run (default 50)")
    parser.add_argument("--seed", type=int, default=1, help="the campaign's seed (default 1)")
    parser.add_argument("--only", type=int, action="append", metavar="CRAWL_INDEX",
                        help="run only this crawl of the campaign (repeatable)")  # fmt: skip
    parser.add_argument("--workers", type=int, default=3, help="workers per crawl (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the summary there")
    parser.add_argument("--keep", action="store_true", help="keep the campaign's directory")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a shell's background job ignores) end the campaign through
    # its cleanup: every worker killed, the services stopped, the tmpfs unmounted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, lambda *_: sys.exit(130))
    if args.crawls < 1 or args.workers < 1:
        parser.error("--crawls and --workers: at least 1")
    if shutil.which("redis-server") is None:
        print("error: redis-server is not installed (.ci/run installs it)", file=sys.stderr)
        return 2
    result = run_campaign(args.seed, args.crawls, args.only, args.workers, args.keep)
    print(
        f"\n{result['crawls']} crawl(s), {result['faults']} fault(s) injected "
        f"({result['not_injected']} planned but not injected), in {result['seconds']:.0f} s\n"
        "faults by kind: "
        + ", ".join(f"{k} {n}" for k, n in result["faults_by_kind"].items())
        + f"\nworker runs: {result['worker_runs']} "
        + ", ".join(f"{k} x{n}" for k, n in result["worker_exits"].items())
        + f"\nlate results refused (pages fetched again): {result['refused']}; "
        f"worker runs that met a full disk: {result['full_disk_met']}; "
        f"results lost: {result['lost']}\n"
        f"invariant failures: {len(result['failed_crawls'])} crawl(s)"
        + "".join(f"\n  crawl {i}: {' | '.join(f)}" for i, f in result["failures"].items())
    )
    for index in result["failed_crawls"]:
        print(f"  replay: python bench/faults.py --seed {args.seed} --only {index}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 1 if result["failed_crawls"] else 0


if __name__ == "__main__":
    sys.exit(main())
