"""The ``latency`` scenario: how close a crawl gets to the latency bound.

    .venv/bin/python bench/run.py latency      # needs: apt-get install -y libnginx-mod-http-echo

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import heapq
import json
import os
import re
import statistics
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.latency_probe import analyse_probe
from bench.site import Hit, Nginx

if TYPE_CHECKING:
    from bench.run import Bench, Run

DELAY = 0.05  # seconds before every response
CONCURRENCY = 16  # in total and per origin (one origin)
TARGET = 0.9  # crawl reaches >= 0.9 of the bound
# LATENCY_CRAWLERS=traverse skips the plain spider (for quick A/B runs of traverse alone).
CRAWLERS = os.environ.get("LATENCY_CRAWLERS", "traverse,plain").split(",")
REPO = Path(__file__).resolve().parent.parent
ECHO_MODULE = "/usr/lib/nginx/modules/ngx_http_echo_module.so"
ECHO_HINT = "the latency bench needs nginx's echo module: apt-get install -y libnginx-mod-http-echo"


class DelayedNginx(Nginx):
    """The bench's nginx, answering every request ``delay`` seconds late."""

    def __init__(self, root: Path, delay: float) -> None:
        if not os.path.exists(ECHO_MODULE):
            raise SystemExit(ECHO_HINT)
        super().__init__(root)
        self.delay = delay

    def _config(self) -> str:
        delayed = (
            f"location / {{ echo_sleep {self.delay}; echo_exec @file; }}\n"
            "        location @file { }\n"
        )
        config = super()._config().replace("index index.html;\n", delayed)
        return f"load_module {ECHO_MODULE};\n{config}"


def analyse(hits: list[Hit], concurrency: int) -> dict[str, Any]:
    """Server-side figures of one crawl (robots.txt included: it is a request too)."""
    if not hits:
        return {}
    starts = sorted(h.start for h in hits)
    ends = sorted(h.end for h in hits)
    span = ends[-1] - starts[0]
    busy = sum(h.duration for h in hits)
    turnaround = [starts[k + concurrency] - ends[k] for k in range(len(hits) - concurrency)]
    # Time with fewer than ``concurrency`` requests in flight, by a sweep over the events.
    events = sorted([(s, 1) for s in starts] + [(e, -1) for e in ends])
    under, level, prev = 0.0, 0, events[0][0]
    for at, step in events:
        if level < concurrency:
            under += at - prev
        level += step
        prev = at
    # Requests started before the first response came back: the BFS's first levels.
    first_round = bisect.bisect_left(starts, ends[0])
    return {
        "requests": len(hits),
        "server_span_s": round(span, 3),
        "mean_in_flight": round(busy / span, 2) if span else 0.0,
        "mean_duration_ms": round(1000 * busy / len(hits), 1),
        "turnaround_median_ms": round(1000 * statistics.median(turnaround), 2) if turnaround else 0,
        "turnaround_p90_ms": round(1000 * statistics.quantiles(turnaround, n=10)[-1], 2)
        if len(turnaround) > 10
        else 0,
        "under_filled_share": round(under / span, 3) if span else 0.0,
        "started_before_first_response": first_round,
    }


@contextlib.contextmanager
def _probe(bench: Bench, path: Path, name: str) -> Iterator[None]:
    """Run one crawl with bench/latency_probe.py writing to ``path``."""
    # In the traverse project the add-on adds its own extensions to this dict.
    extensions: dict[str, int | None] = {"bench.latency_probe.LatencyProbe": 0}
    added = [f"EXTENSIONS={json.dumps(extensions)}", f"LATENCY_PROBE_OUT={path}"]
    target = bench.args.set if name == "traverse" else bench.args.plain_set
    old_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(REPO)  # the plain spider runs outside the project
    target.extend(added)
    try:
        yield
    finally:
        del target[-len(added) :]
        if old_path is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old_path


_HREF = re.compile(rb'href="([^"]*)"|href=\'([^\']*)\'')


def ideal_crawl_s(root: Path, pages: int, delay: float, slots: int) -> float:
    """The crawl time of a crawler whose own work costs nothing, on the bench site's
    real link graph: robots.txt first, then the seed, then every page in BFS order as
    soon as a place is free and a page already fetched has linked to it (at most
    ``pages`` admitted). What the bound leaves out: the first exchanges, when fewer
    pages are known than there are places, and the last ones, when fewer are left."""
    base = "http://site"
    known = {p.relative_to(root).as_posix() for p in root.rglob("*.html")}

    def links(path: str) -> list[str]:
        found = []
        for match in _HREF.finditer((root / path).read_bytes()):
            href = (match.group(1) or match.group(2) or b"").decode()
            url = urllib.parse.urljoin(f"{base}/{path}", href).split("#", 1)[0]
            if url.startswith(base + "/") and url[len(base) + 1 :] in known:
                found.append(url[len(base) + 1 :])
        return found

    now = delay  # robots.txt, before the seed
    queue, seen = collections.deque(["index.html"]), {"index.html"}
    flying: list[tuple[float, str]] = []
    while queue or flying:
        while queue and len(flying) < slots:
            heapq.heappush(flying, (now + delay, queue.popleft()))
        now, path = heapq.heappop(flying)
        for link in links(path):
            if link not in seen and len(seen) < pages:
                seen.add(link)
                queue.append(link)
    return now


# Every response of the bench site comes ``DELAY`` (50 ms) late: nginx's echo
# module (``echo_sleep``, a timer in nginx's event loop, so no worker is held)
# waits, then hands the request to the static file handler (``echo_exec``). With
# ``CONCURRENCY`` requests in flight (``CONCURRENT_REQUESTS`` and
# ``CONCURRENT_REQUESTS_PER_DOMAIN`` both 16, ``TRAVERSE_MIN_DELAY=0``), no crawler
# can beat the *bound* ``pages * DELAY / CONCURRENCY``; the figure is
# ``bound / crawl time`` (target ≥ 0.9). The plain Scrapy spider runs the same way,
# interleaved, to tell what Scrapy costs from what traverse adds.
#
# Where the time beyond the bound goes, from nginx's access log (the end of each
# request, ``$msec``, and its duration, ``$request_time``: server-side, ms):
# - *start-up*: spider opened → the first request reached nginx; *tail*: the last
#   response → spider closed (both from the crawl time minus the server span);
# - *mean in flight*: Σ request durations / server span (16 at best);
# - *turnaround*: with N requests in flight, the (k+N)-th request start is the one
#   that the k-th response end made room for; the median of ``start[k+N] - end[k]``
#   is how long a freed slot stays empty (the client's per-response work, and any
#   wait for the scheduler to have a request);
# - *under-filled*: the share of the server span with fewer than N in flight;
# - *a crawler that costs nothing* (``ideal_crawl_s``): the best any BFS crawler can
#   do on this site's link graph, printed beside the bound with traverse's share of it.
def run(bench: Bench) -> dict[str, Any]:
    from bench.run import line, summary

    args = bench.args
    pages = bench.site.pages
    bound = pages * DELAY / CONCURRENCY
    print(
        f"\n== latency: {pages} pages, {DELAY * 1000:.0f} ms before every response, "
        f"concurrency {CONCURRENCY}: bound {bound:.3f} s ({args.runs} runs each) =="
    )
    bench.stop_server()
    bench.server = DelayedNginx(bench.site.root, DELAY).start()
    bench.origin = bench.server.origin
    bench.seed_url = bench.origin + "/index.html"
    runs: dict[str, list[Run]] = {"traverse": [], "plain": []}
    server: dict[str, list[dict[str, Any]]] = {"traverse": [], "plain": []}
    for i in range(args.warmup + args.runs):
        for name in CRAWLERS:  # interleaved, so drift hits both alike
            since = bench.server.log_offset()
            crawl = bench.traverse if name == "traverse" else bench.plain
            probe = bench.scratch / f"probe-{name}-{i}.json"
            with _probe(bench, probe, name):
                run = crawl(f"latency-{name}-{i}", concurrency=CONCURRENCY)
            bench.check(run, pages)
            if i < args.warmup:
                continue
            runs[name].append(run)
            row = analyse(bench.server.hits(since), CONCURRENCY)
            row["bound_ratio"] = round(bound / run.crawl_s, 3) if run.crawl_s else 0.0
            row["outside_span_s"] = round(run.crawl_s - row.get("server_span_s", 0.0), 3)
            row.update(analyse_probe(str(probe), CONCURRENCY) if probe.exists() else {})
            server[name].append(row)
            print(
                f"  {name:<8} run {i - args.warmup}: crawl {run.crawl_s:.3f} s = "
                f"{row['bound_ratio']:.3f} of the bound; server span {row['server_span_s']:.3f} s,"
                f" mean in flight {row['mean_in_flight']:.2f}, turnaround median "
                f"{row['turnaround_median_ms']:.2f} ms (p90 {row['turnaround_p90_ms']:.2f}), "
                f"under-filled {row['under_filled_share']:.1%}, outside the span "
                f"{row['outside_span_s']:.3f} s, CPU {run.cpu_ms_per_page:.2f} ms/page; "
                f"pages worked on before a request's write {row.get('work_before_send', 0):.2f} "
                f"(none for {row.get('sent_first_share', 0):.0%}), from reaching the downloader "
                f"{row.get('work_reach_to_send', 0):.2f}; a freed place refilled after "
                f"{row.get('refill_wall_ms', 0):.2f} ms wall, {row.get('refill_cpu_ms', 0):.2f} "
                "ms CPU"
            )
    out: dict[str, Any] = {"pages": pages, "delay_s": DELAY, "concurrency": CONCURRENCY}
    out["bound_s"] = bound
    for name in CRAWLERS:
        s = summary(runs[name])
        med = {
            key: round(statistics.median(r[key] for r in server[name]), 3)
            for key in server[name][0]
        }
        ratio = bound / s["crawl_s"] if s["crawl_s"] else 0.0
        out[name] = {"summary": s, "server": server[name], "server_median": med, "ratio": ratio}
        print(line(name, s))
        print(
            f"    {ratio:.3f} of the bound (median crawl time); per page beyond the bound: "
            f"{1000 * (s['crawl_s'] - bound) / pages:.2f} ms; medians: {med}"
        )
    ok = "traverse" in out and out["traverse"]["ratio"] >= TARGET  # LATENCY_CRAWLERS=plain: no
    ideal = ideal_crawl_s(bench.site.root, pages, DELAY, CONCURRENCY)
    out["ideal_crawl_s"] = round(ideal, 3)
    print(
        f"  a crawler that costs nothing: {ideal:.3f} s = {bound / ideal:.3f} of the bound"
        + (
            f"; traverse takes {ideal / out['traverse']['summary']['crawl_s']:.3f} of its pages/s"
            if "traverse" in out and out["traverse"]["summary"]["crawl_s"]
            else ""
        )
    )
    out["target"] = {"ratio_min": TARGET, "ok": ok}
    out["runs"] = [r.to_dict() for name in runs for r in runs[name]]
    print(f" target: traverse >= {TARGET} of the bound: {'PASS' if ok else 'FAIL'}")
    return out
