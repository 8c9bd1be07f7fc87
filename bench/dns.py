"""Crawling by host name costs no more than crawling by IP address.

    .venv/bin/python bench/run.py dns [--runs 5]

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.run import Bench, Run, line, python, summary  # noqa: E402

ROWS: tuple[tuple[str, str, list[str]], ...] = (
    ("ip", "127.0.0.1", []),
    ("localhost", "localhost", []),
    ("localhost-ttl0", "localhost", ["TRAVERSE_DNS_TTL_MAX=0"]),
)


def _crawl(bench: Bench, label: str, host: str, extra: list[str]) -> Run:
    assert bench.server is not None
    origin = f"http://{host}:{bench.server.port}"
    bench.origin, bench.seed_url = origin, origin + "/index.html"
    try:
        return bench.traverse(label, extra=extra)
    finally:
        bench.origin = bench.server.origin
        bench.seed_url = bench.origin + "/index.html"


# Three rows, interleaved (one run of each in turn, repeated), against the same
# nginx on 127.0.0.1 and the same 2,000-page site, default concurrency:
#
# - ``ip``: seed ``http://127.0.0.1:PORT/index.html``: the guard needs no DNS;
# - ``localhost``: seed ``http://localhost:PORT/index.html`` (``localhost`` comes
#   from /etc/hosts through the system resolver, ``getaddrinfo``, which reports no
#   TTL): the guard resolves once and reuses the answer for 60 s;
# - ``localhost, TRAVERSE_DNS_TTL_MAX=0``: the same, resolving for every request
#   and hop: what keeping no DNS answer would cost, in the same code.
#
# Target: ``localhost`` pages/s within noise of ``ip``. Reported: median pages/s,
# CPU ms per page, and the guard's lookup counts from the stats.
#
# On a loaded machine the crawls' spread hides a cost of a few microseconds per
# page, so the scenario also measures it directly (``python bench/dns.py
# lookups N``, in a process of its own): the wall and CPU time (all threads) of N
# sequential ``PinnedResolver.lookup("localhost")`` calls (a lookup per request;
# Twisted's thread-pool ``getaddrinfo``) against N answers taken from the guard's
# ``AnswerCache`` (what it does within an answer's lifetime).
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages = bench.site.pages
    print(f"\n== dns: {pages} pages by IP and by host name, {args.runs} runs each, interleaved ==")
    runs: dict[str, list[Run]] = {name: [] for name, _, _ in ROWS}
    lookups: dict[str, list[int]] = {name: [] for name, _, _ in ROWS}
    for i in range(args.warmup + args.runs):
        for name, host, extra in ROWS:
            r = _crawl(bench, f"{name}-{i}", host, extra)
            bench.check(r, pages)
            if i >= args.warmup:
                runs[name].append(r)
                lookups[name].append(int(r.stats.get("egress/dns_lookup", 0)))
    out: dict[str, Any] = {"pages": pages, "rows": {}}
    for name, _, extra in ROWS:
        s = summary(runs[name])
        print(line(name, s) + f"  DNS lookups {lookups[name]}")
        out["rows"][name] = {
            **s,
            "settings": extra,
            "dns_lookups": lookups[name],
            "runs": [r.to_dict() for r in runs[name]],
        }
    ip, host = out["rows"]["ip"], out["rows"]["localhost"]
    ratio = host["pages_per_s"] / ip["pages_per_s"] if ip["pages_per_s"] else 0.0
    before = out["rows"]["localhost-ttl0"]
    ratio0 = before["pages_per_s"] / ip["pages_per_s"] if ip["pages_per_s"] else 0.0
    print(f"  localhost/ip pages/s {ratio:.2f}x (resolving every request: {ratio0:.2f}x)")
    out["ratio"] = round(ratio, 3)
    out["ratio_ttl0"] = round(ratio0, 3)
    cmd = [python(), str(Path(__file__).resolve()), "lookups", str(pages)]
    costs = [json.loads(subprocess.check_output(cmd, cwd=REPO)) for _ in range(args.runs)]
    out["lookup_cost"] = costs
    for key in ("lookup", "cached"):
        wall = sorted(c[key]["wall_us"] for c in costs)[len(costs) // 2]
        cpu = sorted(c[key]["cpu_us"] for c in costs)[len(costs) // 2]
        print(f"  per request, {key:<7}: {wall:8.1f} us wall, {cpu:8.1f} us CPU (median)")
    return out


def lookups(n: int) -> dict[str, Any]:
    """Time ``n`` guard lookups of ``localhost`` against ``n`` cache hits, in this process."""
    from twisted.internet import asyncioreactor

    asyncioreactor.install()  # type: ignore[no-untyped-call]
    from twisted.internet import defer, reactor, task

    from traverse_crawl.egress.dns_cache import Answer, AnswerCache
    from traverse_crawl.egress.resolver import PinnedResolver

    def timed(calls: int, started: tuple[float, float]) -> dict[str, float]:
        wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
        return {"wall_us": round(1e6 * wall / calls, 2), "cpu_us": round(1e6 * cpu / calls, 2)}

    async def measure() -> dict[str, Any]:
        resolver = PinnedResolver(reactor)
        await resolver.lookup("localhost", 80)  # the thread pool started
        started = time.perf_counter(), time.process_time()
        for _ in range(n):
            await resolver.lookup("localhost", 80)
        out = {"n": n, "lookup": timed(n, started)}
        cache = AnswerCache(300.0, time.monotonic)
        cache.put("localhost", Answer(("127.0.0.1",)))
        started = time.perf_counter(), time.process_time()
        for _ in range(n):
            cache.get("localhost")
        out["cached"] = timed(n, started)
        return out

    result: dict[str, Any] = {}

    def main(_: Any) -> defer.Deferred[None]:
        d = defer.Deferred.fromCoroutine(measure())
        return d.addCallback(result.update)

    try:
        task.react(main)
    except SystemExit:
        pass
    return result


if __name__ == "__main__":
    print(json.dumps(lookups(int(sys.argv[2]))))
