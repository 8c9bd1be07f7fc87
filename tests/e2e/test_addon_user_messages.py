"""What a user's own spider is told, with the add-on: cookies it turned on, requests that
failed with no errback, items whose snapshot could not be stored.

A user project made in the test's directory (``settings.py`` with ``ADDONS``, one
spider), run with ``scrapy crawl`` against loopback servers.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from tests.support.cli import scrapy_env
from tests.support.server import Reply
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.store import source_dir_name

SETTINGS = """
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
ADDONS = {"traverse_crawl.Addon": 100}
"""

LOGIN_SPIDER = """
import scrapy


class LoginSpider(scrapy.Spider):
    name = "login"

    async def start(self):
        yield scrapy.FormRequest(self.url, formdata={"user": "ann", "password": "pw"})

    def parse(self, response):
        yield {"page": response.css("p::text").get()}
"""

URLS_SPIDER = """
import scrapy


class UrlsSpider(scrapy.Spider):
    name = "urls"

    async def start(self):
        for url in self.urls.split(","):
            yield scrapy.Request(url)

    def parse(self, response):
        yield {"url": response.url}
"""


def run(root: Path, spider: str, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    spiders = root / "shop" / "spiders"
    if not spiders.exists():
        spiders.mkdir(parents=True)
        (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
        (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
        (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
        (spiders / "__init__.py").write_text("", encoding="utf-8")
    (spiders / f"{spider}.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", spider, "-s", "LOGSTATS_INTERVAL=0",
         "-s", "TRAVERSE_MIN_DELAY=0", "-s", f"TRAVERSE_STORE={root / 'store'}", *args],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_cookies_the_project_enables_carry_a_login_through(server, tmp_path):
    server.routes["/login"] = Reply(
        302, headers={"Location": "/account", "Set-Cookie": "sid=abc; Path=/"}
    )
    server.routes["/account"] = lambda handler: Reply(
        body="<p>welcome back</p>"
        if handler.headers.get("Cookie") == "sid=abc"
        else "<p>please log in</p>"
    )
    root = tmp_path / "project"
    (root / "shop").mkdir(parents=True)
    items = tmp_path / "items.jsonl"
    proc = run(
        root, "login", LOGIN_SPIDER, "-a", f"url={server.url('/login')}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "COOKIES_ENABLED=True",
        "-O", str(items),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [json.loads(line)["page"] for line in items.read_text().splitlines()] == ["welcome back"]


def test_each_request_failing_with_no_errback_is_one_warning_with_its_kind(server, tmp_path):
    server.routes["/gone"] = Reply(404, body="gone")
    server.routes["/ok"] = Reply(body="<p>ok</p>")
    refused = f"http://127.0.0.1:{closed_port()}/nothing"  # loopback, not allowed
    unreachable = f"http://127.0.0.1:{closed_port()}/down"
    down_origin = unreachable.rsplit("/", 1)[0]
    urls = [server.url("/gone"), refused, unreachable, server.url("/ok")]
    root = tmp_path / "project"
    proc = run(
        root, "urls", URLS_SPIDER, "-a", f"urls={','.join(urls)}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={json.dumps([server.origin, down_origin])}",
        "-s", "RETRY_TIMES=0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stderr.splitlines() if "failed with no errback" in line]
    assert len(lines) == 3, proc.stderr[-3000:]
    said = {url: line for url in urls for line in lines if f"{url} failed" in line}
    assert "WARNING" in said[server.url("/gone")] and "http-error" in said[server.url("/gone")]
    assert "WARNING" in said[refused] and "egress-denied" in said[refused]
    assert "WARNING" in said[unreachable] and "network" in said[unreachable]
    assert "Traceback" not in proc.stderr
    assert "ERROR" not in proc.stderr

    # Replayed: the pages never captured (a 404 reaches no callback, so it is not
    # stored either) fail no-snapshot, each said once.
    replay = run(
        root, "urls", URLS_SPIDER, "-a", f"urls={','.join(urls)}",
        "-s", "TRAVERSE_MODE=replay",
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr[-3000:]
    lines = [line for line in replay.stderr.splitlines() if "failed with no errback" in line]
    assert sorted(line.split(" failed ")[0].split()[-1] for line in lines) == sorted(
        [server.url("/gone"), refused, unreachable]
    ), replay.stderr[-3000:]
    assert all("WARNING" in line and "no-snapshot" in line for line in lines)


def test_an_item_whose_snapshot_was_not_stored_names_no_snapshot(server, tmp_path):
    server.routes["/ok"] = Reply(body="<p>ok</p>")
    root = tmp_path / "project"
    store = root / "store"
    store.mkdir(parents=True)
    # A file where the spider's snapshots directory would be: every write fails.
    (store / source_dir_name(page_id("urls", server.url("/ok")))).write_text("in the way")
    items = tmp_path / "items.jsonl"
    proc = run(
        root, "urls", URLS_SPIDER, "-a", f"urls={server.url('/ok')}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-O", str(items),
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr[-3000:]  # a snapshot was lost
    [item] = [json.loads(line) for line in items.read_text().splitlines()]
    assert item == {"url": server.url("/ok"), "sourceRef": None}
    assert "sourceRef = null: their snapshot was not stored" in proc.stderr
