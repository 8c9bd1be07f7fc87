"""The add-on in a user's own project changes only what its fetch, capture and replay need.

A project made from nothing (``scrapy.cfg``, a ``settings.py`` with ``ADDONS``, one spider
that logs in with a cookie and reports what its process looks like) crawls a loopback
site, then replays it with the server stopped. Its spider keeps Scrapy's stats class,
logging levels, garbage collector and cookies; the same project with
``TRAVERSE_PROCESS_TUNING`` gets the traverse spider's tuning, which shows that the
probes see a difference.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

from tests.support.cli import scrapy_env
from tests.support.server import Reply, Server

SETTINGS = """
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
ADDONS = {"traverse_crawl.Addon": 100}
"""

SPIDER = """
import gc
import logging

import scrapy


class ProbeSpider(scrapy.Spider):
    name = "probe"

    async def start(self):
        yield scrapy.Request(self.url)
        yield scrapy.Request(self.refused)  # the egress guard refuses it; no errback

    def parse(self, response):
        stats = type(self.crawler.stats)
        yield {
            "url": response.url,
            "text": response.css("p::text").get(),
            "stats": f"{stats.__module__}.{stats.__qualname__}",
            "root_level": logging.getLogger().level,
            "frozen": gc.get_freeze_count() > 0,
        }
        yield from response.follow_all(css="a")
"""


def make_project(root: Path) -> Path:
    spiders = root / "shop" / "spiders"
    spiders.mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (spiders / "__init__.py").write_text("", encoding="utf-8")
    (spiders / "probe.py").write_text(SPIDER, encoding="utf-8")
    return root


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def crawl(server: Server, root: Path, items: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    refused = f"http://127.0.0.1:{closed_port()}/private"  # loopback, not allowed
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "probe", "-a", f"url={server.url('/login')}",
         "-a", f"refused={refused}", "-s", f"TRAVERSE_STORE={root / 'store'}",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0.3",
         "-s", "LOGSTATS_INTERVAL=0", "-O", str(items), *extra],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def site(server: Server) -> None:
    server.routes["/login"] = Reply(
        302, headers={"Location": "/account", "Set-Cookie": "sid=abc; Path=/"}
    )
    server.routes["/account"] = lambda handler: Reply(
        body='<p>welcome back</p><a href="/orders">orders</a>'
        if handler.headers.get("Cookie") == "sid=abc"
        else "<p>please log in</p>"
    )
    server.routes["/orders"] = lambda handler: Reply(
        body="<p>2 orders</p>" if handler.headers.get("Cookie") == "sid=abc" else "<p>who?</p>"
    )


def read(items: Path) -> list[dict]:
    rows = [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]
    return sorted(rows, key=lambda row: row["url"])


def test_a_users_project_keeps_its_process_and_still_gets_polite_capture_and_replay(
    server, tmp_path
):
    site(server)
    root = make_project(tmp_path / "project")
    captured = tmp_path / "captured.jsonl"
    run = crawl(server, root, captured)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = read(captured)
    # Scrapy's cookies: the login carries through, with no setting.
    assert [row["text"] for row in rows] == ["welcome back", "2 orders"]
    # Scrapy's stats class, root logger and garbage collector.
    assert {row["stats"] for row in rows} == {"scrapy.statscollectors.MemoryStatsCollector"}
    assert {row["root_level"] for row in rows} == {0}
    assert {row["frozen"] for row in rows} == {False}
    # Polite: one request at a time to the origin, the minimum delay from end to start.
    hits = sorted((hit for hit in server.hits if hit.path != "/robots.txt"), key=lambda h: h.start)
    assert [hit.path for hit in hits] == ["/login", "/account", "/orders"]
    for before, after in pairwise(hits):
        assert after.start - before.end >= 0.3 - 0.05, (before.path, after.path)
    # Captured: every item names the snapshot it was read from.
    assert all(row.get("sourceRef") for row in rows), rows
    # The refused request, which has no errback: one line, with its URL and kind.
    refused = [line for line in run.stderr.splitlines() if "failed with no errback" in line]
    assert len(refused) == 1 and "WARNING" in refused[0] and "egress-denied" in refused[0]
    assert "/private" in refused[0]

    server.shutdown()
    server.server_close()
    replayed = tmp_path / "replayed.jsonl"
    again = crawl(server, root, replayed, "-s", "TRAVERSE_MODE=replay")
    assert again.returncode == 0, again.stderr[-3000:]
    assert [(row["url"], row["text"], row["sourceRef"]) for row in read(replayed)] == [
        (row["url"], row["text"], row["sourceRef"]) for row in rows
    ]
    # A normal run says nothing at WARNING that is not about the crawl: only the line of
    # the request that was refused, so replay has no snapshot for it.
    warnings = [line for line in again.stderr.splitlines() if " WARNING: " in line]
    assert len(warnings) == 1, warnings
    assert "/private failed with no errback" in warnings[0] and "no-snapshot" in warnings[0]


def test_a_project_that_opts_in_gets_the_traverse_spiders_tuning(server, tmp_path):
    site(server)
    root = make_project(tmp_path / "project")
    items = tmp_path / "items.jsonl"
    run = crawl(server, root, items, "-s", "TRAVERSE_PROCESS_TUNING=True")
    assert run.returncode == 0, run.stderr[-3000:]
    rows = read(items)
    assert {row["stats"] for row in rows} == {
        "traverse_crawl.runtime.stats_collector.DirectStatsCollector"
    }
    assert {row["frozen"] for row in rows} == {True}
    # Its cookies are still its own.
    assert [row["text"] for row in rows] == ["welcome back", "2 orders"]
