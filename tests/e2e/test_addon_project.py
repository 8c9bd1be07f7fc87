"""A user's own Scrapy project with the add-on: ``scrapy crawl`` of a plain ``scrapy.Spider``.

The project is made in the test's directory from nothing but a ``scrapy.cfg``, a
``settings.py`` with ``BOT_NAME``, ``SPIDER_MODULES`` and ``ADDONS``, and one spider;
traverse_crawl is found through ``PYTHONPATH`` (or, for its commands, installed from
its wheel), not the project's settings. Against a loopback server whose hit log has
server-side timestamps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from itertools import pairwise
from pathlib import Path

from tests.support.cli import REPO, scrapy_env, wait_for
from tests.support.server import Reply, Server

SPIDER = """
import scrapy


class PlainSpider(scrapy.Spider):
    name = "plain"

    async def start(self):
        yield scrapy.Request(self.url)

    def parse(self, response):
        yield {"url": response.url}
        yield from response.follow_all(css="a")
"""

ROBOTS = "User-agent: *\nDisallow: /private\n"
SETTINGS = """
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
ADDONS = {"traverse_crawl.Addon": 100}
"""


def make_project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    spiders = root / "shop" / "spiders"
    spiders.mkdir(parents=True)
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (spiders / "__init__.py").write_text("", encoding="utf-8")
    (spiders / "plain.py").write_text(SPIDER, encoding="utf-8")
    return root


def start_crawl(server: Server, root: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "plain", "-a", f"url={server.url('/')}",
         "-s", f"TRAVERSE_STORE={root / 'store'}",
         "-s", f"TRAVERSE_MANIFEST_DIR={root / 'manifests'}",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "LOGSTATS_INTERVAL=0", *extra],
        cwd=make_project(root), env=scrapy_env(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_a_plain_spider_is_fetched_politely(server, tmp_path):
    server.site(
        {
            "/robots.txt": Reply(
                body="User-agent: *\nDisallow: /private\n", content_type="text/plain"
            ),
            "/": '<a href="/a">a</a> <a href="/b">b</a> <a href="/private">p</a>',
            "/a": "a",
            "/b": "b",
            "/private": "secret",
        }
    )
    items = tmp_path / "items.jsonl"
    proc = start_crawl(
        server, tmp_path / "project", "-s", "TRAVERSE_MIN_DELAY=0.5", "-O", str(items)
    )
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-3000:]
    hits = sorted(server.hits, key=lambda h: h.start)
    assert hits[0].path == "/robots.txt"
    assert sorted(h.path for h in hits[1:]) == ["/", "/a", "/b"]  # robots.txt keeps /private out
    # Per origin, one request at a time with TRAVERSE_MIN_DELAY from end to start.
    for before, after in pairwise(hits[1:]):
        assert after.start - before.end >= 0.5 - 0.05, (before.path, after.path)
    crawled = sorted(json.loads(line)["url"] for line in items.read_text().splitlines())
    assert crawled == [server.url(p) for p in ("/", "/a", "/b")]


def test_the_first_signal_sends_nothing_queued_behind_the_delay(server, tmp_path):
    server.site({"/": "".join(f'<a href="/p{i}">p</a>' for i in range(3)), "/p0": "p", "/p1": "p"})
    proc = start_crawl(server, tmp_path / "project", "-s", "TRAVERSE_MIN_DELAY=20")
    wait_for(lambda: server.paths()[-1:] == ["/"], "the first page")
    time.sleep(0.5)  # the three pages now wait in the origin's slot, 20 s apart
    signalled = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=15)  # not 20 s for the next page
    assert proc.returncode == 0, stderr[-3000:]
    assert [h.path for h in server.hits if h.start >= signalled] == []


def test_the_second_signal_does_not_wait_for_a_download_in_flight(server, tmp_path):
    server.site({"/": '<a href="/slow">slow</a>', "/slow": Reply(body="slow", delay=60)})
    proc = start_crawl(
        server, tmp_path / "project",
        "-s", "TRAVERSE_MIN_DELAY=0", "-s", "DOWNLOAD_TIMEOUT=120", "-s", "RETRY_TIMES=0",
    )  # fmt: skip
    wait_for(lambda: "/slow" in server.started, "the slow page's request")
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert proc.poll() is None  # the first signal lets the download in flight finish...
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=20)  # ...the second does not wait for it
    assert "abandoning the downloads in flight; writing the manifests" in stderr, stderr[-3000:]


def install_wheel(tmp_path: Path) -> Path:
    """``pip wheel`` of a copy of the sources, unpacked as pip installs it: a site directory."""
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(REPO / "pyproject.toml", source)
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(REPO / "traverse_crawl", source / "traverse_crawl", ignore=ignore)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), "."],
        cwd=source, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def test_the_installed_packages_commands_are_in_any_project(tmp_path):
    env = {**scrapy_env(), "PYTHONPATH": str(install_wheel(tmp_path))}
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "-h"],
        cwd=make_project(tmp_path / "project"), env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    listed = {line.split()[0] for line in run.stdout.splitlines() if line.startswith("  ")}
    # The project has no COMMANDS_MODULE: these come from the package's entry points.
    assert {"crawlstatus", "diff", "report", "snapshot", "snapshots", "warc"} <= listed


SLOTTED_SPIDER = """
import scrapy


class SlottedSpider(scrapy.Spider):
    name = "slotted"

    async def start(self):
        for i in range(5):
            yield scrapy.Request(
                f"{self.url}p{i}", meta={"download_slot": f"mine-{i}"}, dont_filter=True
            )

    def parse(self, response):
        yield {"url": response.url}
"""


def test_a_request_naming_its_own_download_slot_keeps_its_origin_delay(server, tmp_path):
    server.fallback = Reply(body="<p>page</p>")
    root = make_project(tmp_path / "project")
    (root / "shop" / "spiders" / "slotted.py").write_text(SLOTTED_SPIDER, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "slotted", "-a", f"url={server.url('/')}",
         "-s", f"TRAVERSE_STORE={root / 'store'}", "-s", "TRAVERSE_MIN_DELAY=0.5",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "LOGSTATS_INTERVAL=0"],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = sorted((h for h in server.hits if h.path.startswith("/p")), key=lambda h: h.start)
    assert len(pages) == 5
    for before, after in pairwise(pages):  # one at a time, the delay from end to start
        assert after.start - before.end >= 0.5 - 0.05, (before.path, after.path)
