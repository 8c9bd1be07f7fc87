"""Distributed crawls on Redis: what Redis costs, what a second worker gains.

    .venv/bin/python bench/run.py distributed            # (or: bench/distributed.py)
    .venv/bin/python bench/run.py distributed --runs 3 --origins 40 --per-origin 50

What it measures and how: the comment above ``main``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
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

import redis  # noqa: E402

from bench.run import RESULTS, environment, parse_stats, python  # noqa: E402
from bench.site import DEFAULT_PAGE_BYTES, DEFAULT_SEED, Nginx, free_port, generate  # noqa: E402
from traverse_crawl.config.settings import TraverseConfig  # noqa: E402
from traverse_crawl.crawl.frontier import Outcome  # noqa: E402
from traverse_crawl.crawl.seeds import Seed  # noqa: E402
from traverse_crawl.distributed import lua_scripts as scripts  # noqa: E402
from traverse_crawl.distributed.client import Keys  # noqa: E402
from traverse_crawl.distributed.frontier import join_sync, parse_tasks  # noqa: E402
from traverse_crawl.jobdir.state import page_record  # noqa: E402

TARGET_ONE = 0.7  # 1 worker with Redis >= 0.7x the single process
TARGET_TWO = 1.6  # 2 workers >= 1.6x 1 worker


class MultiNginx(Nginx):
    """The bench nginx, listening on several loopback ports: one origin each."""

    def __init__(self, root: Path, origins: int) -> None:
        super().__init__(root)
        self.ports = [self.port] + [free_port() for _ in range(origins - 1)]
        self.origins = [f"http://127.0.0.1:{port}" for port in self.ports]

    def _config(self) -> str:
        listen = "".join(f"listen 127.0.0.1:{port};\n        " for port in self.ports)
        return super()._config().replace(f"listen 127.0.0.1:{self.port};\n        ", listen)


class RedisProcess:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        binary = shutil.which("redis-server") or "redis-server"
        self.proc = subprocess.Popen(
            [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--dir", str(directory), "--logfile", "redis.log"],
        )  # fmt: skip
        self.conn = redis.Redis.from_url(self.url, decode_responses=True)
        for _ in range(200):
            try:
                self.conn.ping()
                return
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise SystemExit("redis-server did not start")

    def memory(self) -> int:
        return int(self.conn.info("memory")["used_memory"])

    def stop(self) -> None:
        self.conn.close()
        self.proc.kill()
        self.proc.wait()


def crawl_cmd(seeds: Path | None, out: Path, origins: list[str], per_origin: int) -> list[str]:
    return [
        python(), "-m", "scrapy", "crawl", "traverse",
        *(["-a", f"seeds={seeds}"] if seeds else []),
        "-s", "TRAVERSE_MODE=live", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_MAX_PAGES={per_origin}", "-s", "TRAVERSE_MAX_DEPTH=50",
        "-s", f"TRAVERSE_EGRESS_ALLOW={','.join(origins)}",
        "-s", f"TRAVERSE_STORE={out / 'store'}", "-s", f"TRAVERSE_MANIFEST_DIR={out / 'm'}",
        "-s", "LOG_LEVEL=INFO", "-s", "LOGSTATS_INTERVAL=0", "-s", "TRAVERSE_PROGRESS=off",
    ]  # fmt: skip


def run_workers(cmds: list[list[str]], out: Path) -> dict[str, Any]:
    """Start every command at once; crawl time, CPU and pages of the lot."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs, logs = [], []
    for k, cmd in enumerate(cmds):
        log = (out / f"worker{k}.log").open("wb")
        logs.append(log)
        procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT))
    cpu, codes = 0.0, []
    for proc in procs:
        _, status, usage = os.wait4(proc.pid, 0)
        codes.append(os.waitstatus_to_exitcode(status))
        cpu += usage.ru_utime + usage.ru_stime
    for log in logs:
        log.close()
    stats = [
        parse_stats((out / f"worker{k}.log").read_text("utf-8", "replace"))
        for k in range(len(cmds))
    ]
    pages = 0
    for path in (out / "m").glob("*.json"):
        pages += len(json.loads(path.read_text("utf-8"))["pages"])
    crawl_s = max(float(s.get("elapsed_time_seconds", 0)) for s in stats)
    return {
        "codes": codes, "pages": pages, "crawl_s": round(crawl_s, 3), "cpu_s": round(cpu, 3),
        "pages_per_s": round(pages / crawl_s, 1) if crawl_s else 0.0,
        "cpu_ms_per_page": round(1000 * cpu / pages, 3) if pages else 0.0,
        "load_before": os.getloadavg()[0],
    }  # fmt: skip


def queued_memory(server: RedisProcess, urls: int) -> dict[str, Any]:
    """Bytes of Redis memory for ``urls`` URLs queued and admitted (one seed, one page)."""
    config = TraverseConfig.from_settings(
        {"TRAVERSE_MAX_PAGES": urls + 1, "TRAVERSE_MAX_DEPTH": 5, "TRAVERSE_MODE": "live"}
    )
    keys = Keys("memory")
    before = server.memory()
    join_sync(server.conn, keys, config, [Seed("mem", "http://127.0.0.1:9/")])
    (task,) = parse_tasks(
        server.conn.register_script(scripts.TAKE)(args=[keys.prefix, "b", 1, 60000])
    )
    links = [f"http://127.0.0.1:9/catalog/item-{i:06d}.html" for i in range(urls)]
    record = page_record(0, 0, (task.url, 0), Outcome({"snapshot": {"url": task.url}}), None)
    args: list[Any] = [keys.prefix, 0, 0, task.token, json.dumps(record), json.dumps(links)]
    args += ["b", 0, 60000]  # take nothing with the commit
    server.conn.register_script(scripts.COMMIT)(args=args)
    used = server.memory() - before
    return {"urls": urls, "bytes": used, "bytes_per_url": round(used / urls, 1),
            "mean_url_chars": round(sum(map(len, links)) / urls, 1)}  # fmt: skip


# The bench site of ``bench/site.py`` served by one nginx on ``--origins`` loopback
# ports (40 origins by default: 127.0.0.1:P1 ... P40), one seed per origin with
# ``TRAVERSE_MAX_PAGES=--per-origin``, ``TRAVERSE_MIN_DELAY=0`` (CPU-bound), live
# mode. Interleaved, ``--runs`` times after ``--warmup``:
#
# - *single*: one ``scrapy crawl`` without Redis;
# - *1 worker*: the same crawl with ``REDIS_URL`` (a throwaway ``redis-server``);
# - *2 workers*: two workers of one crawl, started together.
#
# Crawl time: Scrapy's ``elapsed_time_seconds`` (spider opened → closed; for two
# workers the longer of the two); pages/s = the crawl's pages / crawl time; CPU =
# user+sys of every process, per page. Targets: 1 worker >= 0.7x single, 2 workers
# >= 1.6x 1 worker. Then Redis memory: ``INFO memory`` ``used_memory`` after 10,000
# URLs are queued and admitted for one seed (a page of 10,000 links), and per page
# recorded at the end of the 1-worker crawl (its records are kept until the crawl's
# keys are deleted); and Redis's own time per script call (``INFO commandstats``,
# ``cmdstat_evalsha``), which bounds how many workers one Redis serves.
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--origins", type=int, default=40)
    parser.add_argument("--per-origin", type=int, default=50)
    parser.add_argument("--queued", type=int, default=10_000)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="traverse-bench-dist-"))
    site = generate(scratch / "site", args.per_origin * 4, DEFAULT_PAGE_BYTES, DEFAULT_SEED)
    nginx = MultiNginx(site.root, args.origins)
    nginx.start()
    server = RedisProcess(scratch)
    seeds = scratch / "seeds.txt"
    seeds.write_text("".join(f"o{i}\t{o}/index.html\n" for i, o in enumerate(nginx.origins)))
    runs: dict[str, list[dict[str, Any]]] = {"single": [], "one": [], "two": []}
    result: dict[str, Any] = {"command": "distributed", "environment": environment(),
                              "settings": vars(args)}  # fmt: skip
    try:
        for i in range(args.warmup + args.runs):
            for variant in runs:
                out = scratch / f"{variant}-{i}"
                out.mkdir()
                base = crawl_cmd(seeds, out, nginx.origins, args.per_origin)
                joiner = crawl_cmd(None, out, nginx.origins, args.per_origin)
                redis_args = [
                    "-s",
                    f"REDIS_URL={server.url}",
                    "-s",
                    f"TRAVERSE_CRAWL_ID={variant}{i}",
                ]
                cmds = {
                    "single": [base],
                    "one": [base + redis_args],
                    "two": [base + redis_args, joiner + redis_args],
                }[variant]
                before = server.memory()
                run = run_workers(cmds, out)
                if variant == "one":  # what the crawl's keys hold once it is finished
                    used = server.memory() - before
                    run["redis_bytes_per_page"] = round(used / max(1, run["pages"]), 1)
                print(f"  {variant:>6} run {i}: {run}")
                if i >= args.warmup:
                    runs[variant].append(run)
        med = {k: statistics.median(r["pages_per_s"] for r in v) for k, v in runs.items()}
        cpu = {k: statistics.median(r["cpu_ms_per_page"] for r in v) for k, v in runs.items()}
        one_vs_single = med["one"] / med["single"] if med["single"] else 0.0
        two_vs_one = med["two"] / med["one"] if med["one"] else 0.0
        scripts_run = server.conn.info("commandstats").get("cmdstat_evalsha", {})
        memory = queued_memory(server, args.queued)
        print(f"pages/s (median): {med}; CPU ms/page: {cpu}")
        print(f"1 worker / single = {one_vs_single:.2f}x (target >= {TARGET_ONE}x)")
        print(f"2 workers / 1 worker = {two_vs_one:.2f}x (target >= {TARGET_TWO}x)")
        print(f"Redis memory for {args.queued} queued URLs: {memory}")
        print(f"Redis scripts (EVALSHA) over every run: {scripts_run}")
        result.update(runs=runs, median_pages_per_s=med, cpu_ms_per_page=cpu, memory=memory)
        result.update(redis_scripts=scripts_run)
        result.update(one_vs_single=round(one_vs_single, 3), two_vs_one=round(two_vs_one, 3))
    finally:
        server.stop()
        nginx.cleanup()
        shutil.rmtree(scratch, ignore_errors=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"distributed-{stamp}.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
