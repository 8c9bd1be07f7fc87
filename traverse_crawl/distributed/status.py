"""What ``scrapy crawlstatus`` shows of a distributed crawl: read from Redis, changed nowhere.

Per seed: pages recorded, queued (admitted, waiting for a worker), in flight
(leased to a worker), URLs discovered, and whether its manifest is written; the
workers seen within ``TRAVERSE_LEASE_TIMEOUT`` (the others count as gone).
"""

from __future__ import annotations

import json
from typing import Any

from traverse_crawl.distributed.client import Keys
from traverse_crawl.distributed.frontier import FORMAT
from traverse_crawl.utils.redact import redact_text, redact_url
from traverse_crawl.utils.terminal import escape_controls


def crawl_status(conn: Any, keys: Keys, lease_timeout: float) -> dict[str, Any] | None:
    """The crawl's figures, or None when Redis holds no crawl of that id.

    ``conn``: a ``redis.Redis`` (its replies are untyped).
    """
    if not conn.exists(keys.config):
        return None
    definition = json.loads(conn.get(keys.config))
    if not isinstance(definition, dict) or definition.get("format") != FORMAT:
        raise ValueError("its config is not a traverse_crawl crawl's definition")
    seconds, micros = conn.time()
    now = int(seconds) * 1000 + int(micros) // 1000
    flying: dict[int, int] = {}
    for task in conn.zrange(keys.leases, 0, -1):
        seed, _, index = str(task).partition(":")
        if index != "m":
            flying[int(seed)] = flying.get(int(seed), 0) + 1
    seeds = []
    for number, text in enumerate(conn.lrange(keys.seedlist, 0, -1)):
        seed = json.loads(text)
        state: dict[str, str] = conn.hgetall(keys.seed(number, "state"))
        admitted, recorded = int(state.get("admitted", 0)), int(state.get("committed", 0))
        in_flight = flying.get(number, 0)
        seeds.append({
            "id": redact_text(str(seed["id"])),
            "url": redact_url(str(seed["url"])),
            "recorded": recorded,
            "queued": max(0, admitted - recorded - in_flight),
            "inFlight": in_flight,
            "discovered": int(conn.llen(keys.seed(number, "queue")))
            + int(conn.scard(keys.seed(number, "overflow"))),
            "finished": state.get("finished") == "1",
            "manifestWritten": state.get("written") == "1",
        })  # fmt: skip
    workers = []
    for name, seen in conn.zrange(keys.workers, 0, -1, withscores=True):
        age = max(0.0, (now - float(seen)) / 1000)
        if age <= lease_timeout:
            workers.append({"worker": str(name), "lastSeenSecondsAgo": round(age, 1)})
    written = int(conn.get(keys.written) or 0)
    return {
        "crawl": keys.crawl_id,
        "seeds": seeds,
        "workers": workers,
        "finished": bool(seeds) and written >= len(seeds),
    }


def render(status: dict[str, Any]) -> str:
    """The text form: one line per seed, then the live workers (control characters of the
    crawl's ids and names escaped)."""
    seeds = status["seeds"]
    state = "finished" if status["finished"] else "running"
    lines = [f"crawl {escape_controls(status['crawl'])}: {len(seeds)} seed(s), {state}"]
    for seed in seeds:
        mark = "manifest written" if seed["manifestWritten"] else (
            "finished" if seed["finished"] else "open"
        )  # fmt: skip
        lines.append(
            f"  {escape_controls(seed['id'])}: {seed['recorded']} recorded, "
            f"{seed['queued']} queued, {seed['inFlight']} in flight, "
            f"{seed['discovered']} discovered ({mark})"
        )
    lines.append(f"live workers: {len(status['workers'])}")
    lines += [
        f"  {escape_controls(w['worker'])} (seen {w['lastSeenSecondsAgo']:g} s ago)"
        for w in status["workers"]
    ]
    return "\n".join(lines) + "\n"
