"""Hundreds of origins at ``TRAVERSE_MIN_DELAY=1``, against the politeness limit.

    .venv/bin/python bench/run.py origins [--origins 200] [--origin-pages 10] [--runs 3]

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
import statistics
from pathlib import Path
from typing import Any

from bench.run import Bench, Run, line, summary
from bench.site import Nginx

DELAY = 1.0


class ManyOrigins(Nginx):
    """The bench's nginx, listening on 127.0.0.1 .. 127.0.0.N at one port; origins in the log."""

    def __init__(self, root: Path, count: int) -> None:
        super().__init__(root)
        self.hosts = [f"127.0.0.{i}" for i in range(1, count + 1)]

    def _config(self) -> str:
        listens = "\n".join(f"        listen {host}:{self.port};" for host in self.hosts)
        conf = super()._config().replace(f"        listen 127.0.0.1:{self.port};", listens)
        conf = conf.replace("worker_connections 1024", "worker_connections 8192")
        # $server_addr after the URI: which origin each request went to.
        return conf.replace("$request_uri'", "$request_uri $server_addr'")


def crawl_origins(
    bench: Bench,
    server: ManyOrigins,
    label: str,
    per_origin: int,
    settings: list[str] | None = None,
    cwd: Path | None = None,
) -> Run:
    """One crawl of every origin; ``settings`` (NAME=VALUE) are added to the command,
    ``cwd`` is the checkout that runs it (this one by default)."""
    work = bench._dir(label)
    origins = [f"http://{host}:{server.port}" for host in server.hosts]
    seeds = work / "seeds.txt"
    seeds.write_text("".join(f"{o}/index.html\n" for o in origins), encoding="utf-8")
    manifests = work / "manifests"
    extra = [f"TRAVERSE_EGRESS_ALLOW={','.join(origins)}", *(settings or [])]
    if not any(s.startswith("CONCURRENT_REQUESTS=") for s in bench.args.set):
        extra.append(f"CONCURRENT_REQUESTS={len(origins)}")  # --set one to try another
    cmd = bench.traverse_cmd("live", per_origin, work / "store", manifests, DELAY, None, extra)
    cmd[cmd.index(f"url={bench.seed_url}")] = f"seeds={seeds}"
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="traverse_crawl.settings")
    run = bench._run(label, cmd, cwd or Path(__file__).resolve().parent.parent, env, work)
    errors: collections.Counter[str] = collections.Counter()
    for path in manifests.glob("*.json"):
        pages = json.loads(path.read_text(encoding="utf-8"))["pages"]
        run.pages += len(pages)
        errors.update(p["fetch"]["error"]["kind"] for p in pages if "error" in p["fetch"])
    run.errors = dict(errors)
    return run


def _gaps(server: ManyOrigins, since: int) -> dict[str, float]:
    """From nginx's log: end-to-start gaps between page requests to one origin, and when
    the origins' first page requests came (seconds after the very first request)."""
    by_origin: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for hit in server.hits(since):
        uri, _, address = hit.uri.rpartition(" ")
        if uri != "/robots.txt":
            by_origin[address].append((hit.start, hit.end))
    spans = [sorted(s) for s in by_origin.values()]
    gaps = [b[0] - a[1] for s in spans for a, b in itertools.pairwise(s)]
    if not gaps:
        return {}
    first = min(s[0][0] for s in spans)
    return {
        "min_gap_s": round(min(gaps), 3),
        "median_gap_s": round(statistics.median(gaps), 3),
        "max_gap_s": round(max(gaps), 3),
        "last_origin_start_s": round(max(s[0][0] for s in spans) - first, 3),
        "origin_span_median_s": round(statistics.median(s[-1][1] - s[0][0] for s in spans), 3),
    }


# One nginx listens on the same port of ``--origins`` loopback addresses
# (127.0.0.1, 127.0.0.2, ...), each serving the bench site; each address is an
# origin of its own. One crawl takes every origin as a seed (``-a seeds=FILE``,
# one line per origin, all of them in ``TRAVERSE_EGRESS_ALLOW``) with
# ``TRAVERSE_MIN_DELAY=1`` and ``TRAVERSE_MAX_PAGES=--origin-pages`` per seed, and
# ``CONCURRENT_REQUESTS`` = the number of origins (``CONCURRENT_REQUESTS_PER_DOMAIN``
# stays 8; politeness allows one request per origin at a time anyway), so the
# total is not the limit (``--set CONCURRENT_REQUESTS=16`` tries the project's
# default). robots.txt is fetched once per origin, without a delay.
#
# The politeness limit: each origin allows one page per ``delay`` seconds, so
# ``origins / delay`` pages/s, and the P pages of an origin need at least
# ``(P - 1) * delay`` seconds of gaps. Reported: pages/s (pages / crawl time)
# beside ``origins / delay`` and beside the bound ``origins * P / ((P - 1) * delay)``
# of that crawl, the ratio of the crawl time to ``(P - 1) * delay``, CPU ms per
# page, and, from nginx's log, the gaps between two page requests to one origin
# (the smallest must be ≥ the delay: politeness held; the median says how much
# later than the delay the next request came), when the last origin got its first
# page request, and the median time from an origin's first to last page.
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    count, per_origin = args.origins, args.origin_pages
    bench.stop_server()  # this scenario's nginx listens on every origin
    server = ManyOrigins(bench.site.root, count)
    server.start()
    bench.server = server
    expected = count * per_origin
    limit = count / DELAY
    bound_s = (per_origin - 1) * DELAY
    print(
        f"\n== origins: {count} origins x {per_origin} pages at TRAVERSE_MIN_DELAY={DELAY:g}, "
        f"{args.runs} runs (+{args.warmup} warm-up); limit {limit:.0f} pages/s, "
        f"gaps alone {bound_s:.0f} s =="
    )
    runs: list[Run] = []
    gaps: list[dict[str, float]] = []
    for i in range(args.warmup + args.runs):
        since = server.log_offset()
        r = crawl_origins(bench, server, f"origins-{i}", per_origin)
        bench.check(r, expected)
        if i >= args.warmup:
            runs.append(r)
            gaps.append(_gaps(server, since))
            print(f"  run {i - args.warmup}: {r.pages_per_s:.1f} pages/s, nginx: {gaps[-1]}")
    s = summary(runs)
    ratio = s["crawl_s"] / bound_s if bound_s else 0.0
    print(line(f"{count} origins", s))
    print(
        f"  {s['pages_per_s']:.1f} pages/s against origins/delay = {limit:.0f} "
        f"({s['pages_per_s'] / limit:.2f}x) and this crawl's bound {expected / bound_s:.0f} "
        f"pages/s; crawl time {ratio:.3f}x the {bound_s:.0f} s of gaps"
    )
    return {
        "origins": count,
        "pages_per_origin": per_origin,
        "delay_s": DELAY,
        "limit_pages_per_s": limit,
        "gaps_alone_s": bound_s,
        "crawl_time_ratio": round(ratio, 3),
        "nginx": gaps,
        "summary": s,
        "runs": [r.to_dict() for r in runs],
    }
