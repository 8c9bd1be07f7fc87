"""traverse_crawl benchmarks: throughput, politeness, replay, capture (docs/performance.md).

    .venv/bin/python bench/run.py crawl        # traverse vs a plain Scrapy spider
    .venv/bin/python bench/run.py politeness   # 100 pages at TRAVERSE_MIN_DELAY=0.05
    .venv/bin/python bench/run.py replay       # replay pages/s beside live pages/s
    .venv/bin/python bench/run.py all          # the three above, sharing one site and server
    .venv/bin/python bench/run.py warc         # capture with TRAVERSE_WARC_DIR vs without
    .venv/bin/python bench/run.py capture      # capture (default mode) vs live
    .venv/bin/python bench/run.py profile      # py-spy profiles of both spiders, hot spots
    .venv/bin/python bench/run.py dns          # by host name (localhost) beside by IP
    .venv/bin/python bench/run.py origins      # hundreds of origins at MIN_DELAY=1
    .venv/bin/python bench/run.py distributed  # Redis workers (bench/distributed.py)
    .venv/bin/python bench/run.py latency      # 50 ms per response, against the bound
    .venv/bin/python bench/run.py scale        # RSS and pages/s at 2,000-100,000 pages
    .venv/bin/python bench/run.py writersplit  # capture's writer process, split
    .venv/bin/python bench/run.py extract      # capture with TRAVERSE_EXTRACT; scrapy extract
    .venv/bin/python bench/run.py objectstore  # capture into an S3 bucket vs a bare client
    .venv/bin/python bench/run.py startup      # a one-page crawl against the plain spider's
    .venv/bin/python bench/run.py features     # CPU per page of each mode and feature
    .venv/bin/python bench/run.py vs-traverse  # 500 pages at concurrency 1 against Traverse (npm)
    .venv/bin/python bench/run.py ab --baseline DIR  # live, capture, replay against DIR

Every crawl is a real ``scrapy`` process against nginx on 127.0.0.1 serving the
synthetic site of ``bench/site.py``; configurations are interleaved and the median of
``--runs`` is reported (the method: docs/performance.md). Results are printed and
written as JSON to ``bench/results/``.
"""

from __future__ import annotations

import argparse
import ast
import collections
import datetime as dt
import importlib
import itertools
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.capture import bench_capture, writer_cpu_ms_per_page  # noqa: E402
from bench.site import (  # noqa: E402
    DEFAULT_PAGE_BYTES,
    DEFAULT_PAGES,
    DEFAULT_SEED,
    Nginx,
    SiteInfo,
    find_nginx,
    generate,
)

RESULTS = REPO / "bench" / "results"
PLAIN_SPIDER = REPO / "bench" / "plain_spider.py"
MAX_DEPTH = 50  # far beyond the site's BFS depth (5): the page cap is what stops a crawl

# The targets each scenario reports against.
TARGET_SPEED_RATIO = 1.0  # traverse pages/s >= 1.0x the plain spider's
TARGET_MEMORY_RATIO = 1.2  # traverse peak RSS <= 1.2x the plain spider's
TARGET_POLITENESS_RATIO = 1.2  # 100 pages at 0.05 s: <= 1.2x the 5 s of delays
TARGET_REPLAY_RATIO = 2.5  # replay pages/s >= 2.5x live pages/s
TARGET_WARC_RATIO = 0.85  # capture with WARC pages/s >= 0.85x capture without
# Scenarios in bench/<name>.py, each with run(bench).
MODULES = [
    "ab", "dns", "extract", "features", "origins", "latency", "metrics", "objectstore", "scale",
    "startup", "vs-traverse", "writersplit",
]  # fmt: skip


def python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


# -- one crawl process --------------------------------------------------------


@dataclass
class Run:
    label: str
    rc: int
    pages: int
    crawl_s: float  # elapsed_time_seconds: spider opened -> closed
    wall_s: float  # the whole process
    cpu_s: float
    maxrss_mb: float
    hits: int  # requests nginx logged during the run
    finish_reason: str
    load_before: float = 0.0  # 1-minute load average: the machine is shared
    errors: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    log: str = ""
    manifest: str = ""

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.crawl_s if self.crawl_s > 0 else 0.0

    @property
    def wall_pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_pages_per_s(self) -> float:
        """Pages per second of the crawler's own CPU: robust to other load."""
        return self.pages / self.cpu_s if self.cpu_s > 0 else 0.0

    @property
    def cpu_ms_per_page(self) -> float:
        return 1000 * self.cpu_s / self.pages if self.pages else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["pages_per_s"] = round(self.pages_per_s, 1)
        out["wall_pages_per_s"] = round(self.wall_pages_per_s, 1)
        out["cpu_ms_per_page"] = round(self.cpu_ms_per_page, 2)
        out["cpu_pages_per_s"] = round(self.cpu_pages_per_s, 1)
        return out


_STATS_KEYS = (
    "elapsed_time_seconds",
    "finish_reason",
    "item_scraped_count",
    "downloader/request_count",
    "downloader/response_count",
    "response_received_count",
    "dupefilter/filtered",
    "request_depth_max",
    "frontier/pages",
    "robots/fetched",
    "robotstxt/request_count",
    "retry/count",
    "replay/served",
    "replay/miss",
    "replay/refused",
    "snapshot/stored",
    "snapshot/store_failed",
    "egress/dns_lookup",
    "egress/dns_reused",
    "snapshot/batches",
)


def parse_stats(log: str) -> dict[str, Any]:
    """The dict of Scrapy's final 'Dumping Scrapy stats:' log record."""
    at = log.rfind("Dumping Scrapy stats:")
    if at < 0:
        return {}
    text = log[log.index("{", at) :]
    end = re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ", text, re.M)
    if end:
        text = text[: end.start()]
    text = re.sub(r"datetime\.datetime\([^)]*\)", "None", text.strip())
    try:
        stats = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return {}
    return stats if isinstance(stats, dict) else {}


def run_process(
    cmd: list[str], cwd: Path, env: dict[str, str], log_path: Path
) -> tuple[int, float, Any]:
    """Run ``cmd`` to completion; (exit code, wall seconds, its own rusage)."""
    with log_path.open("wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        # wait4 gives the rusage of this one child (RUSAGE_CHILDREN would be the
        # maximum over every child so far).
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, wall, usage


class Bench:
    """A site, its nginx, a scratch directory, and the crawl runners."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.scratch = Path(tempfile.mkdtemp(prefix="traverse-bench-"))
        site_dir = args.site_dir or self.scratch / "site"
        t0 = time.perf_counter()
        self.site: SiteInfo = generate(site_dir, args.pages, args.page_bytes, args.seed)
        self.site_seconds = time.perf_counter() - t0
        self.server: Nginx | None = None
        self.counter = 0
        self.seed_url = ""
        self.origin = ""

    def start_server(self) -> None:
        self.server = Nginx(self.site.root).start()
        self.origin = self.server.origin
        self.seed_url = self.origin + "/index.html"

    def stop_server(self) -> None:
        if self.server is not None:
            self.server.cleanup()
            self.server = None

    def close(self) -> None:
        self.stop_server()
        if not self.args.keep:
            shutil.rmtree(self.scratch, ignore_errors=True)
        else:
            print(f"kept scratch directory {self.scratch}")

    def _dir(self, label: str) -> Path:
        self.counter += 1
        path = self.scratch / "runs" / f"{self.counter:03d}-{label}"
        path.mkdir(parents=True)
        return path

    @staticmethod
    def _concurrency(concurrency: int | None) -> list[str]:
        # N means N in flight in total and for the one origin: both settings.
        if concurrency is None:
            return []
        return [
            "-s",
            f"CONCURRENT_REQUESTS={concurrency}",
            "-s",
            f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
        ]

    def traverse_cmd(
        self,
        mode: str,
        pages: int,
        store: Path,
        manifests: Path,
        min_delay: float = 0.0,
        concurrency: int | None = None,
        extra: list[str] | None = None,
    ) -> list[str]:
        return [
            python(), "-m", "scrapy", "crawl", "traverse", "-a", f"url={self.seed_url}",
            "-s", f"TRAVERSE_MODE={mode}",
            "-s", f"TRAVERSE_MIN_DELAY={min_delay}",
            "-s", f"TRAVERSE_MAX_PAGES={pages}",
            "-s", f"TRAVERSE_MAX_DEPTH={MAX_DEPTH}",
            "-s", f"TRAVERSE_EGRESS_ALLOW={self.origin}",
            "-s", f"TRAVERSE_STORE={store}",
            "-s", f"TRAVERSE_MANIFEST_DIR={manifests}",
            "-s", "LOG_LEVEL=INFO",
            *self._concurrency(concurrency),
            *(arg for setting in [*self.args.set, *(extra or [])] for arg in ("-s", setting)),
        ]  # fmt: skip

    def traverse(
        self,
        label: str,
        mode: str = "live",
        pages: int | None = None,
        min_delay: float = 0.0,
        concurrency: int | None = None,
        store: Path | None = None,
        prefix: list[str] | None = None,
        extra: list[str] | None = None,
        cwd: Path | None = None,
    ) -> Run:
        work = self._dir(label)
        pages = self.site.pages if pages is None else pages
        store = store or work / "store"
        manifests = work / "manifests"
        cmd = self.traverse_cmd(mode, pages, store, manifests, min_delay, concurrency, extra)
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="traverse_crawl.settings")
        run = self._run(label, (prefix or []) + cmd, cwd or REPO, env, work)
        found = sorted(p for p in manifests.glob("*.json") if not p.name.endswith(".checks.json"))
        if found:
            manifest = json.loads(found[0].read_text(encoding="utf-8"))
            run.manifest = str(found[0])
            run.pages = len(manifest["pages"])
            run.errors = dict(
                collections.Counter(
                    p["fetch"]["error"]["kind"] for p in manifest["pages"] if "error" in p["fetch"]
                )
            )
        return run

    def plain(
        self,
        label: str,
        pages: int | None = None,
        concurrency: int | None = None,
        prefix: list[str] | None = None,
    ) -> Run:
        work = self._dir(label)
        pages = self.site.pages if pages is None else pages
        cmd = [
            python(), "-m", "scrapy", "runspider", str(PLAIN_SPIDER), "-a", f"url={self.seed_url}",
            "-s", f"DEPTH_LIMIT={MAX_DEPTH}",
            "-s", f"CLOSESPIDER_ITEMCOUNT={pages}",
            "-s", "LOG_LEVEL=INFO",
            *self._concurrency(concurrency),
            *(arg for setting in self.args.plain_set for arg in ("-s", setting)),
        ]  # fmt: skip
        # Outside the project: no scrapy.cfg above ``work``, no settings module.
        env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
        run = self._run(label, (prefix or []) + cmd, work, env, work)
        run.pages = int(run.stats.get("item_scraped_count", 0))
        return run

    def _run(self, label: str, cmd: list[str], cwd: Path, env: dict[str, str], work: Path) -> Run:
        since = self.server.log_offset() if self.server else 0
        log_path = work / "crawl.log"
        load = os.getloadavg()[0]
        rc, wall, usage = run_process(cmd, cwd, env, log_path)
        stats = parse_stats(log_path.read_text(encoding="utf-8", errors="replace"))
        hits = len(self.server.hits(since)) if self.server else 0
        return Run(
            label=label,
            rc=rc,
            pages=0,
            crawl_s=float(stats.get("elapsed_time_seconds") or 0.0),
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            maxrss_mb=usage.ru_maxrss / 1024,  # kilobytes on Linux
            hits=hits,
            finish_reason=str(stats.get("finish_reason", "")),
            stats={k: stats[k] for k in _STATS_KEYS if k in stats},
            log=str(log_path),
            load_before=round(load, 2),
        )

    def check(self, run: Run, pages: int) -> bool:
        ok = run.rc == 0 and run.pages == pages and not run.errors and run.crawl_s > 0
        if not ok:
            kept = RESULTS / "logs" / Path(run.log).parent.name
            kept.mkdir(parents=True, exist_ok=True)
            shutil.copy(run.log, kept / "crawl.log")
            print(
                f"  !! {run.label}: rc={run.rc} pages={run.pages}/{pages} errors={run.errors} "
                f"finish={run.finish_reason!r}; log kept at {kept / 'crawl.log'}"
            )
        return ok


# -- summaries ----------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def summary(runs: list[Run]) -> dict[str, Any]:
    return {
        "runs": len(runs),
        "pages": [r.pages for r in runs],
        "pages_per_s": round(median([r.pages_per_s for r in runs]), 1),
        "pages_per_s_all": [round(r.pages_per_s, 1) for r in runs],
        "crawl_s": round(median([r.crawl_s for r in runs]), 3),
        "wall_s": round(median([r.wall_s for r in runs]), 3),
        "wall_pages_per_s": round(median([r.wall_pages_per_s for r in runs]), 1),
        "maxrss_mb": round(median([r.maxrss_mb for r in runs]), 1),
        "maxrss_mb_all": [round(r.maxrss_mb, 1) for r in runs],
        "cpu_ms_per_page": round(median([r.cpu_ms_per_page for r in runs]), 2),
        "cpu_pages_per_s": round(median([r.cpu_pages_per_s for r in runs]), 1),
        "load_before": [r.load_before for r in runs],
        "hits": [r.hits for r in runs],
        "valid": all(r.rc == 0 and not r.errors for r in runs),
    }


def line(name: str, s: dict[str, Any]) -> str:
    return (
        f"  {name:<34} {s['pages_per_s']:>8.1f} pages/s  (runs {s['pages_per_s_all']})  "
        f"crawl {s['crawl_s']:.2f} s  wall {s['wall_s']:.2f} s  "
        f"peak RSS {s['maxrss_mb']:.1f} MB  CPU {s['cpu_ms_per_page']:.2f} ms/page  "
        f"load {s['load_before']}"
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# -- throughput ----------------------------------------------------------------


def bench_crawl(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages = bench.site.pages
    configs: list[int | None] = [None, *args.concurrency]
    out: dict[str, Any] = {"pages": pages, "configs": {}}
    print(f"\n== crawl: {pages} pages, {args.runs} runs each (+{args.warmup} warm-up) ==")
    for conc in configs:
        tag = "default" if conc is None else f"c{conc}"
        for _ in range(args.warmup):
            bench.traverse(f"traverse-{tag}-warmup", concurrency=conc)
            bench.plain(f"plain-{tag}-warmup", concurrency=conc)
        t_runs: list[Run] = []
        p_runs: list[Run] = []
        for i in range(args.runs):  # interleaved, so drift hits both alike
            t = bench.traverse(f"traverse-{tag}-{i}", concurrency=conc)
            bench.check(t, pages)
            t_runs.append(t)
            p = bench.plain(f"plain-{tag}-{i}", concurrency=conc)
            bench.check(p, pages)
            p_runs.append(p)
        ts, ps = summary(t_runs), summary(p_runs)
        speed = ts["pages_per_s"] / ps["pages_per_s"] if ps["pages_per_s"] else 0.0
        memory = ts["maxrss_mb"] / ps["maxrss_mb"] if ps["maxrss_mb"] else 0.0
        cpu = ps["cpu_ms_per_page"] / ts["cpu_ms_per_page"] if ts["cpu_ms_per_page"] else 0.0
        name = (
            "project defaults (16 total, 8 per origin)"
            if conc is None
            else f"CONCURRENT_REQUESTS{{,_PER_DOMAIN}}={conc}"
        )
        print(f" {name}")
        print(line("traverse (live)", ts))
        print(line("plain Scrapy spider", ps))
        print(
            f"  ratio traverse/plain: pages/s {speed:.2f}x, peak RSS {memory:.2f}x, "
            f"pages per CPU-second {cpu:.2f}x"
        )
        out["configs"][tag] = {
            "concurrency": conc,
            "traverse": ts,
            "plain": ps,
            "speed_ratio": round(speed, 3),
            "memory_ratio": round(memory, 3),
            "cpu_efficiency_ratio": round(cpu, 3),
            "runs": [r.to_dict() for r in t_runs + p_runs],
        }
    main = out["configs"]["default"]
    out["target"] = {
        "speed_ratio_min": TARGET_SPEED_RATIO,
        "memory_ratio_max": TARGET_MEMORY_RATIO,
        "speed_ok": main["speed_ratio"] >= TARGET_SPEED_RATIO,
        "memory_ok": main["memory_ratio"] <= TARGET_MEMORY_RATIO,
    }
    print(
        f" target (defaults): pages/s >= {TARGET_SPEED_RATIO}x plain: "
        f"{verdict(out['target']['speed_ok'])}; peak RSS <= {TARGET_MEMORY_RATIO}x plain: "
        f"{verdict(out['target']['memory_ok'])}"
    )
    return out


# -- politeness ------------------------------------------------------------------


def bench_politeness(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages, delay = args.polite_pages, args.polite_delay
    required = (pages - 1) * delay  # one delay between consecutive page requests
    nominal = pages * delay  # the 5 s that the delays alone require
    print(f"\n== politeness: {pages} pages at TRAVERSE_MIN_DELAY={delay}, {args.runs} runs ==")
    runs: list[Run] = []
    server_rows: list[dict[str, float]] = []
    for i in range(args.runs):
        assert bench.server is not None
        since = bench.server.log_offset()
        run = bench.traverse(f"polite-{i}", pages=pages, min_delay=delay)
        bench.check(run, pages)
        hits = [h for h in bench.server.hits(since) if h.uri != "/robots.txt"]
        hits.sort(key=lambda h: h.start)
        gaps = [b.start - a.end for a, b in itertools.pairwise(hits)]
        overlaps = sum(1 for gap in gaps if gap < 0)
        row = {
            "page_hits": len(hits),
            "server_span_s": round(hits[-1].end - hits[0].start, 3) if hits else 0.0,
            "min_gap_s": round(min(gaps), 3) if gaps else 0.0,
            "mean_gap_s": round(statistics.mean(gaps), 4) if gaps else 0.0,
            "overlapping_requests": overlaps,
        }
        server_rows.append(row)
        runs.append(run)
        print(
            f"  run {i}: crawl {run.crawl_s:.3f} s, server span {row['server_span_s']:.3f} s, "
            f"{row['page_hits']} page hits, gaps min {row['min_gap_s']:.3f} s "
            f"mean {row['mean_gap_s']:.4f} s, overlapping {overlaps}"
        )
    s = summary(runs)
    span = median([r["server_span_s"] for r in server_rows])
    ratio = s["crawl_s"] / nominal
    out = {
        "pages": pages,
        "min_delay": delay,
        "required_s": round(required, 3),
        "nominal_s": nominal,
        "crawl_s": s["crawl_s"],
        "server_span_s": round(span, 3),
        "ratio_to_nominal": round(ratio, 3),
        "ratio_to_required": round(s["crawl_s"] / required, 3) if required else 0.0,
        "summary": s,
        "server": server_rows,
        "runs": [r.to_dict() for r in runs],
        "target": {"ratio_max": TARGET_POLITENESS_RATIO, "ok": ratio <= TARGET_POLITENESS_RATIO},
    }
    print(
        f"  median crawl {s['crawl_s']:.3f} s = {ratio:.3f}x the {nominal:.2f} s of delays "
        f"({out['ratio_to_required']:.3f}x the strict {required:.2f} s = {pages - 1} gaps); "
        f"server-side span {span:.3f} s"
    )
    print(f" target: <= {TARGET_POLITENESS_RATIO}x: {verdict(out['target']['ok'])}")
    return out


# -- replay ----------------------------------------------------------------------


def _placeholder(relative: str) -> bool:
    text = (REPO / relative).read_text(encoding="utf-8")
    return "Placeholder while the component is built" in text


def _pages_view(path: str) -> list[tuple[str, int, str | None]]:
    manifest = json.loads(Path(path).read_text(encoding="utf-8"))
    return [(p["url"], p["depth"], p.get("sourceRef")) for p in manifest["pages"]]


def bench_replay(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages = bench.site.pages
    print(f"\n== replay: {pages} pages, {args.runs} runs each ==")
    missing = [
        f
        for f in (
            "traverse_crawl/replay/middleware.py",
            "traverse_crawl/snapshots/pipeline.py",
        )
        if _placeholder(f)
    ]
    if missing:
        print(f"  skipped: still placeholders: {', '.join(missing)}")
        return {"skipped": f"placeholders: {missing}"}
    store = bench.scratch / "capture-store"
    captures: list[Run] = []
    for i in range(args.runs):  # each capture into a fresh store; the last one is replayed
        shutil.rmtree(store, ignore_errors=True)
        run = bench.traverse(f"capture-{i}", mode="capture", store=store)
        bench.check(run, pages)
        captures.append(run)
    cap = summary(captures)
    store_files = sum(1 for p in store.rglob("*") if p.is_file())
    store_bytes = sum(p.stat().st_size for p in store.rglob("*") if p.is_file())
    # Live and replay alternate, so that the shared machine's load drifts over
    # both alike. nginx keeps serving the live runs; replay must not need it (it
    # opens no connection at all): each replay run is checked to have sent it
    # nothing, and a last replay runs with nginx stopped.
    # --baseline: the same store replayed by another checkout too, alternating alike.
    live_runs: list[Run] = []
    replays: list[Run] = []
    baselines: list[Run] = []
    for i in range(args.warmup + args.runs):
        run = bench.traverse(f"live-{i}")
        bench.check(run, pages)
        replay = bench.traverse(f"replay-{i}", mode="replay", store=store)
        bench.check(replay, pages)
        round_replays = [replay]
        if args.baseline:
            earlier = bench.traverse(
                f"replay-baseline-{i}", mode="replay", store=store, cwd=args.baseline
            )
            bench.check(earlier, pages)
            round_replays.append(earlier)
        for r in round_replays:
            if r.hits:
                print(f"  !! {r.label} sent {r.hits} request(s) to the server")
        if i >= args.warmup:
            live_runs.append(run)
            replays.append(replay)
            if args.baseline:
                baselines.append(earlier)
    bench.stop_server()
    offline = bench.traverse("replay-offline", mode="replay", store=store)
    bench.check(offline, pages)
    live = summary(live_runs)
    print(line("live", live))
    print(line("capture", cap))
    rep = summary(replays)
    print(line("replay", rep))
    print(line("replay, nginx stopped (1 run)", summary([offline])))
    if baselines:
        base = summary(baselines)
        print(line("replay, baseline checkout", base))
        print(f"  baseline replay/live pages/s {base['pages_per_s'] / live['pages_per_s']:.2f}x")
    same = all(
        _pages_view(r.manifest) == _pages_view(captures[-1].manifest)
        for r in [*replays, *baselines, offline]
    )
    ratio = rep["pages_per_s"] / live["pages_per_s"] if live["pages_per_s"] else 0.0
    cpu_ratio = live["cpu_ms_per_page"] / rep["cpu_ms_per_page"] if rep["cpu_ms_per_page"] else 0.0
    print(
        f"  replay/live pages/s {ratio:.2f}x (pages per CPU-second {cpu_ratio:.2f}x); "
        f"replay manifests equal the capture's (urls, depths, sourceRefs): {same}"
    )
    # Whole process: pages / wall seconds, start-up and shutdown included, the way a
    # user times `scrapy crawl`.
    wall_ratio = (
        rep["wall_pages_per_s"] / live["wall_pages_per_s"] if live["wall_pages_per_s"] else 0.0
    )
    print(
        f"  replay/live whole-process pages/s {wall_ratio:.2f}x "
        f"(wall {rep['wall_s']:.2f} s against {live['wall_s']:.2f} s)"
    )
    print(
        f" target: replay >= {TARGET_REPLAY_RATIO}x live: crawl time "
        f"{verdict(ratio >= TARGET_REPLAY_RATIO)}, whole process "
        f"{verdict(wall_ratio >= TARGET_REPLAY_RATIO)}"
    )
    return {
        "pages": pages,
        "live": live,
        "capture": cap,
        "replay": rep,
        "store_files": store_files,
        "store_mb": round(store_bytes / 2**20, 1),
        "replay_matches_capture": same,
        "ratio": round(ratio, 3),
        "whole_process_ratio": round(wall_ratio, 3),
        "cpu_efficiency_ratio": round(cpu_ratio, 3),
        "replay_offline": offline.to_dict(),
        "replay_baseline": summary(baselines) if baselines else None,
        "runs": [r.to_dict() for r in captures + live_runs + replays + baselines],
        "target": {"ratio_min": TARGET_REPLAY_RATIO, "ok": ratio >= TARGET_REPLAY_RATIO},
    }


def bench_warc(bench: Bench) -> dict[str, Any]:
    """Capture with TRAVERSE_WARC_DIR beside capture without, interleaved."""
    args = bench.args
    pages = bench.site.pages
    print(f"\n== warc: capture {pages} pages with and without TRAVERSE_WARC_DIR ==")
    plain_runs: list[Run] = []
    warc_runs: list[Run] = []
    warc_bytes: list[int] = []
    for i in range(args.warmup + args.runs):
        run = bench.traverse(f"capture-{i}", mode="capture")
        bench.check(run, pages)
        warc_dir = bench.scratch / f"warc-{i}"
        with_warc = bench.traverse(
            f"capture-warc-{i}", mode="capture", extra=[f"TRAVERSE_WARC_DIR={warc_dir}"]
        )
        bench.check(with_warc, pages)
        if i >= args.warmup:
            plain_runs.append(run)
            warc_runs.append(with_warc)
            warc_bytes.append(sum(p.stat().st_size for p in warc_dir.glob("*.warc.gz")))
        shutil.rmtree(warc_dir, ignore_errors=True)
    plain, warc = summary(plain_runs), summary(warc_runs)
    print(line("capture", plain))
    print(line("capture + WARC", warc))
    ratio = warc["pages_per_s"] / plain["pages_per_s"] if plain["pages_per_s"] else 0.0
    mb = statistics.median(warc_bytes) / 2**20 if warc_bytes else 0.0
    # The writer process's own CPU (logged by the extension), part of the run's CPU above.
    logged = [
        re.search(r"writer process: ([\d.]+) s of CPU", Path(r.log).read_text()) for r in warc_runs
    ]
    writer = [1000 * float(m.group(1)) / pages for m in logged if m]
    warc["writer_cpu_ms_per_page"] = round(statistics.median(writer), 2) if writer else None
    print(f"  WARC/no-WARC pages/s {ratio:.2f}x; WARC files {mb:.1f} MiB per capture")
    print(f"  of the CPU with WARC, the writer process: {warc['writer_cpu_ms_per_page']} ms/page")
    print(f" target: >= {TARGET_WARC_RATIO}x: {verdict(ratio >= TARGET_WARC_RATIO)}")
    return {
        "pages": pages,
        "capture": plain,
        "capture_warc": warc,
        "ratio": round(ratio, 3),
        "warc_mb": round(mb, 1),
        "runs": [r.to_dict() for r in plain_runs + warc_runs],
        "target": {"ratio_min": TARGET_WARC_RATIO, "ok": ratio >= TARGET_WARC_RATIO},
    }


# -- profiles -----------------------------------------------------------------------


# Where a sample's time goes: the deepest frame of its stack that matches one of
# these (first pattern wins within a frame). Frames are py-spy's "func (path:line)".
# Twisted runs Deferred callbacks inline, so one stack often goes from the HTTP
# parser through the downloader into the spider: the deepest match is the one
# that did the work.
BUCKETS: list[tuple[str, str]] = [
    (
        "HTTP client (Twisted HTTP/1.1, TCP)",
        r"\((twisted/web/_newclient|twisted/web/http_headers|twisted/internet/tcp|"
        r"twisted/internet/abstract|scrapy/core/downloader/handlers/http11)",
    ),
    (
        "HTML parse (lxml)",
        r"document_fromstring|create_root_node|^_parse \(traverse_crawl/crawl/links",
    ),
    ("snapshot: decode + sha256", r"\((traverse_crawl/snapshots/model\.py|w3lib/encoding)"),
    ("WHATWG URLs (ada-url, fetch/urls)", r"\((ada_url/|traverse_crawl/fetch/urls)"),
    (
        "link extraction (selectors, urljoin)",
        r"^discover_links |\((parsel/|cssselect/)|^urljoin |^TextResponse\.(follow|urljoin) "
        r"|^Response\.(follow|urljoin) ",
    ),
    ("frontier (record, admit, page object)", r"\(traverse_crawl/crawl/(frontier|queue|spool)"),
    ("sourceRef", r"\(traverse_crawl/snapshots/source_ref"),
    (
        "snapshot store (files, JSON)",
        r"\(traverse_crawl/(snapshots/(store|file_text|batch_write|writer|writer_child)|utils/atomic)",
    ),
    ("Request objects", r"^Request\.__init__ |\(scrapy/http/request/|^Request\.replace "),
    ("scheduler priority queues (pqueues)", r"\((scrapy/pqueues|queuelib/)"),
    (
        "scheduler + dupefilter + fingerprints",
        r"\((scrapy/core/scheduler|scrapy/dupefilters|scrapy/utils/request|w3lib/url)",
    ),
    ("downloader middlewares: traverse_crawl", r"\(traverse_crawl/[a-z_]+/([a-z_]+_)?middleware"),
    ("downloader middlewares: Scrapy built-ins", r"\(scrapy/downloadermiddlewares/"),
    ("spider middlewares: Scrapy built-ins", r"\(scrapy/spidermiddlewares/"),
    ("item pipelines (manifest, store)", r"\((traverse_crawl/[a-z_]+/pipeline|scrapy/pipelines/)"),
    (
        "egress guard / resolver",
        r"\((traverse_crawl/egress/|"
        r"scrapy/resolver|twisted/internet/_resolver)",
    ),
    (
        "spider callback (own code)",
        r"^(TraverseSpider|PlainSpider)\.|\(traverse_crawl/(crawl/(spider|items|outcomes)|fetch/exceptions|signals)",
    ),
    (
        "stats, signals, logging, extensions",
        r"\((scrapy/statscollectors|scrapy/signalmanager|pydispatch/|logging/|scrapy/logformatter|"
        r"scrapy/extensions/|scrapy/utils/signal)",
    ),
    (
        "per-response output fan-out (asyncio tasks)",
        r"^_parallel_asyncio|^(BaseEventLoop\.)?create_task |^_wait |\(asyncio/queues",
    ),
    ("Scrapy engine, downloader, scraper (other)", r"\(scrapy/"),
    ("event loop (Twisted/asyncio, other)", r"\(twisted/"),
]
_BUCKET_RE = [(name, re.compile(pattern)) for name, pattern in BUCKETS]
STARTUP = "start-up, imports, shutdown (outside the event loop)"


def _bucket(frames: list[str], thread: bool = False) -> str:
    if any(f.startswith("_find_and_load ") for f in frames) or not (
        thread or any(f.startswith("BaseEventLoop.run_forever ") for f in frames)
    ):
        return STARTUP
    # The deepest frame that names a bucket wins, so a cost is charged to the
    # component that asked for it: asyncio's own frames match no bucket (but the
    # task fan-out's), and the Twisted/Scrapy catch-alls only match where no
    # more specific frame lies deeper.
    for frame in reversed(frames):
        for name, regex in _BUCKET_RE:
            if regex.search(frame):
                return name
    return "other (threads)" if thread else "event loop (Twisted/asyncio, other)"


_IDLE_LEAF = re.compile(r"^(Condition\.wait|wait|_wait_for_tstate_lock|select|poll) \(")


def aggregate(raw: Path, cpu_ms_per_page: float, top: int) -> dict[str, Any]:
    """Sample shares per bucket and function from a py-spy raw file.

    py-spy counts a sample whenever the thread is not parked in a wait, also
    while it is runnable but descheduled by other load; so shares are taken
    from the profile and converted to milliseconds with ``cpu_ms_per_page``,
    the CPU time per page measured on unprofiled runs.

    Worker-thread samples (Twisted's pool: DNS, store reads and writes) count
    too, except those parked in a wait, which py-spy does not always see as idle.
    """
    inclusive: collections.Counter[str] = collections.Counter()
    self_: collections.Counter[str] = collections.Counter()
    buckets: collections.Counter[str] = collections.Counter()
    total = thread_samples = 0
    for row in raw.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        thread = frames[0].startswith("Thread._bootstrap ")
        if thread:
            if _IDLE_LEAF.match(frames[-1]):
                continue
            thread_samples += n
        total += n
        buckets[_bucket(frames, thread)] += n
        names = [re.sub(r":\d+\)$", ")", f) for f in frames]
        for name in set(names):
            inclusive[name] += n
        self_[names[-1]] += n

    def ms_per_page(samples: int) -> float:
        return round(cpu_ms_per_page * samples / total, 3) if total else 0.0

    def share(counter: collections.Counter[str], k: int | None) -> list[dict[str, Any]]:
        return [
            {"name": name, "pct": round(100 * v / total, 1), "ms_per_page": ms_per_page(v)}
            for name, v in counter.most_common(k)
            if total
        ]

    return {
        "samples": total,
        "worker_thread_samples": thread_samples,
        "ms_per_page": ms_per_page(total),
        "buckets": share(buckets, None),
        "inclusive": share(inclusive, top),
        "self": share(self_, top),
    }


def bench_profile(bench: Bench) -> dict[str, Any]:
    args = bench.args
    spy = shutil.which("py-spy") or str(REPO / ".venv" / "bin" / "py-spy")
    if not Path(spy).exists():
        raise SystemExit("py-spy is needed: .venv/bin/pip install py-spy")
    pages = bench.site.pages
    rate = args.profile_rate
    out: dict[str, Any] = {"pages": pages, "rate": rate}
    print(f"\n== profile: py-spy at {rate} samples/s, {pages} pages ==")
    RESULTS.mkdir(parents=True, exist_ok=True)
    for name in ("traverse", "plain"):
        crawl = bench.traverse if name == "traverse" else bench.plain
        cpu = summary([crawl(f"{name}-cpu-{i}") for i in range(args.runs)])["cpu_ms_per_page"]
        raw = RESULTS / f"profile-{name}.pyspy.txt"
        prefix = [spy, "record", "--format", "raw", "--rate", str(rate), "--output", str(raw), "--"]
        run = crawl(f"profile-{name}", prefix=prefix)
        bench.check(run, pages)
        out[name] = {"run": run.to_dict(), **aggregate(raw, cpu, args.profile_top)}
        print(
            f" {name}: {cpu:.2f} ms of CPU per page (median of {args.runs} unprofiled runs); "
            f"profiled crawl {run.crawl_s:.2f} s, {out[name]['samples']} samples"
        )
    t_b = {b["name"]: b for b in out["traverse"]["buckets"]}
    p_b = {b["name"]: b for b in out["plain"]["buckets"]}
    rows = []
    for name in dict.fromkeys([*t_b, *p_b]):
        t = t_b.get(name, {}).get("ms_per_page", 0.0)
        p = p_b.get(name, {}).get("ms_per_page", 0.0)
        rows.append({"bucket": name, "traverse_ms": t, "plain_ms": p, "delta_ms": round(t - p, 3)})
    rows.sort(key=lambda r: -r["delta_ms"])
    out["comparison"] = rows

    def row(name: str, t: float, p: float) -> str:
        return f"  {name:<52} {t:>9.3f} {p:>7.3f} {t - p:>+7.3f}"

    title = "where the time goes (ms of CPU per page)"
    print(f"\n  {title:<52} {'traverse':>9} {'plain':>7} {'delta':>7}")
    for r in rows:
        print(row(r["bucket"], r["traverse_ms"], r["plain_ms"]))
    print(row("total", out["traverse"]["ms_per_page"], out["plain"]["ms_per_page"]))
    for name in ("traverse", "plain"):
        print(f"\n  {name}: top functions by inclusive share")
        for f in out[name]["inclusive"]:
            print(f"   {f['pct']:5.1f}%  {f['ms_per_page']:6.3f} ms/page  {f['name']}")
        print(f"  {name}: top functions by self share")
        for f in out[name]["self"][:15]:
            print(f"   {f['pct']:5.1f}%  {f['ms_per_page']:6.3f} ms/page  {f['name']}")
    if not _placeholder("traverse_crawl/replay/middleware.py"):
        out.update(_profile_modes(bench, spy, rate, out["traverse"]))
    print(f" raw profiles (flamegraph-ready): {RESULTS}/profile-*.pyspy.txt")
    return out


def _profile_modes(bench: Bench, spy: str, rate: int, live: dict[str, Any]) -> dict[str, Any]:
    """Profile capture, then a replay of the captured store, beside the live crawl."""
    pages = bench.site.pages
    prefix = ["record", "--format", "raw", "--rate", str(rate), "--output"]
    out: dict[str, Any] = {}
    store = bench.scratch / "profile-store"
    for mode in ("capture", "replay"):
        runs = []
        for i in range(bench.args.runs):
            if mode == "capture":
                shutil.rmtree(store, ignore_errors=True)
            runs.append(bench.traverse(f"{mode}-cpu-{i}", mode=mode, store=store))
        cpu = summary(runs)["cpu_ms_per_page"]
        # py-spy samples the crawl process only: its CPU without the writer process's.
        writer = writer_cpu_ms_per_page(runs, pages) if mode == "capture" else None
        if writer is not None:
            print(f"\n {mode}: the snapshot writer process {writer:.2f} ms of CPU per page")
            cpu -= writer
        raw = RESULTS / f"profile-{mode}.pyspy.txt"
        if mode == "capture":
            shutil.rmtree(store, ignore_errors=True)  # the profiled capture is the one replayed
        run = bench.traverse(
            f"profile-{mode}", mode=mode, store=store, prefix=[spy, *prefix, str(raw), "--"]
        )
        bench.check(run, pages)
        out[mode] = {"run": run.to_dict(), **aggregate(raw, cpu, bench.args.profile_top)}
        print(
            f"\n {mode}: {cpu:.2f} ms of CPU per page (median of {len(runs)} unprofiled runs); "
            f"{out[mode]['samples']} samples, "
            f"{out[mode]['worker_thread_samples']} in worker threads"
        )
    columns = {"live": live, **out}
    per = {m: {b["name"]: b["ms_per_page"] for b in c["buckets"]} for m, c in columns.items()}
    names = sorted(
        dict.fromkeys(n for m in per.values() for n in m), key=lambda n: -per["live"].get(n, 0)
    )
    print(f"\n  {'ms of CPU per page':<52} {'live':>7} {'capture':>7} {'replay':>7}")
    for name in names:
        cells = " ".join(f"{per[m].get(name, 0.0):>7.3f}" for m in columns)
        print(f"  {name:<52} {cells}")
    print(f"  {'total':<52} " + " ".join(f"{c['ms_per_page']:>7.3f}" for c in columns.values()))
    for mode in out:
        print(f"  {mode}: top functions by self share")
        for f in out[mode]["self"][:15]:
            print(f"   {f['pct']:5.1f}%  {f['ms_per_page']:6.3f} ms/page  {f['name']}")
    return out


# -- entry point ------------------------------------------------------------------


def environment() -> dict[str, Any]:
    def cmd(*argv: str) -> str:
        try:
            done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return ""
        return (done.stdout or done.stderr).strip()  # nginx -v prints to stderr

    cpu = ""
    try:
        for row in Path("/proc/cpuinfo").read_text().splitlines():
            if row.startswith("model name"):
                cpu = row.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    nginx = find_nginx()
    return {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_head": cmd("git", "rev-parse", "--short", "HEAD"),
        "git_dirty_package_files": cmd("git", "status", "--short", "traverse_crawl").splitlines(),
        "python": platform.python_version(),
        "scrapy": cmd(python(), "-c", "import scrapy; print(scrapy.__version__)"),
        "nginx": cmd(nginx, "-v") if nginx else "",
        "cpu": cpu,
        "cores": os.cpu_count(),
    }


def main(argv: list[str] | None = None) -> int:
    if (sys.argv[1:] if argv is None else argv)[:1] == ["distributed"]:  # bench/distributed.py
        from bench.distributed import main as distributed

        return distributed((sys.argv[1:] if argv is None else argv)[1:])
    parser = argparse.ArgumentParser(
        description="traverse_crawl benchmarks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from bench.scale import add_arguments  # scale's own options

    parser.add_argument(
        "what",
        choices=["crawl", "politeness", "replay", "all", "profile", "warc", "capture", *MODULES],
    )
    add_arguments(parser)
    parser.add_argument("--runs", type=int, default=3, help="measured runs per configuration")
    parser.add_argument("--warmup", type=int, default=1, help="unmeasured runs first")
    parser.add_argument("--pages", type=int, default=DEFAULT_PAGES)
    parser.add_argument("--page-bytes", type=int, default=DEFAULT_PAGE_BYTES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument(
        "--concurrency",
        type=lambda s: [int(x) for x in s.split(",") if x],
        default=[1, 16],
        help="extra CONCURRENT_REQUESTS(_PER_DOMAIN) values for crawl (1,16; '' for none)",
    )
    parser.add_argument("--polite-pages", type=int, default=100)
    parser.add_argument("--origins", type=int, default=200, help="origins for origins (<= 254)")
    parser.add_argument("--origin-pages", type=int, default=10, help="pages per origin (origins)")
    parser.add_argument("--polite-delay", type=float, default=0.05)
    parser.add_argument("--profile-rate", type=int, default=200)
    parser.add_argument("--profile-top", type=int, default=40)
    parser.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="ab, capture, replay: another checkout, interleaved (A/B)",
    )
    parser.add_argument(
        "--feature",
        action="append",
        default=[],
        metavar="LABEL:MODE:NAME=VALUE,...",
        help="features: one more row (repeatable), e.g. 'extraction:live:NAME=VALUE'",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="TEXT",
        help="features: only the rows whose label contains TEXT (repeatable), and their bases",
    )
    parser.add_argument("--site-dir", type=Path, default=None, help="reuse a generated site here")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an extra Scrapy setting for the traverse runs only (repeatable), to try a knob",
    )
    parser.add_argument(
        "--plain-set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an extra Scrapy setting for the plain spider's runs only (repeatable)",
    )
    args = parser.parse_args(argv)
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)  # progress shows when piped to a file
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop nginx, remove temp files
    if find_nginx() is None:
        from bench.site import INSTALL_HINT

        print(INSTALL_HINT, file=sys.stderr)
        return 2

    bench = Bench(args)
    result: dict[str, Any] = {"command": args.what, "environment": environment()}
    result["site"] = bench.site.to_dict()
    result["settings"] = {
        "runs": args.runs,
        "warmup": args.warmup,
        "max_depth": MAX_DEPTH,
        "crawl_time": "Scrapy's elapsed_time_seconds (spider opened -> closed)",
        "traverse_extra_settings": args.set,
        "plain_extra_settings": args.plain_set,
    }
    print(
        f"site: {bench.site.pages} pages, mean {bench.site.total_bytes / bench.site.pages:.0f} "
        f"bytes, BFS depth {bench.site.max_depth}, seed {bench.site.seed}, "
        f"digest {bench.site.digest[:12]} ({bench.site_seconds:.1f} s)"
    )
    try:
        bench.start_server()
        print(f"nginx at {bench.origin}")
        if args.what in ("crawl", "all"):
            result["crawl"] = bench_crawl(bench)
        if args.what in ("politeness", "all"):
            if bench.server is None:
                bench.start_server()
            result["politeness"] = bench_politeness(bench)
        if args.what == "profile":
            result["profile"] = bench_profile(bench)
        if args.what == "warc":
            result["warc"] = bench_warc(bench)
        if args.what == "capture":
            result["capture"] = bench_capture(bench)
        if args.what in MODULES:  # a scenario of its own module: bench/<name>.py, run(bench)
            module = importlib.import_module(f"bench.{args.what.replace('-', '_')}")
            result[args.what] = module.run(bench)
        if args.what in ("replay", "all"):
            if bench.server is None:
                bench.start_server()
            result["replay"] = bench_replay(bench)
    finally:
        bench.close()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"{args.what}-{stamp}.json"
    text = json.dumps(result, indent=2, default=str)
    path.write_text(text)
    (RESULTS / f"latest-{args.what}.json").write_text(text)
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
