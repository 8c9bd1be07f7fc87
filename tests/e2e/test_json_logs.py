"""``TRAVERSE_LOG_FORMAT=json``: every stderr line of a real crawl is one JSON object.

Crawls with a 404 page, an origin that refuses connections, a robots.txt that fails, a
Python warning and ``LOG_LEVEL=DEBUG``; a user's spider whose callback raises; and the
text format, unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.test_addon_project import make_project
from tests.support.cli import crawl_args, scrapy, scrapy_env
from tests.support.scrapyd_harness import free_port
from tests.support.server import Reply, Server

UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FIELDS = {"time", "level", "logger", "message"}
# Read through DNS_RESOLVER, the resolver is ours all the same: Scrapy warns that
# the setting is deprecated (a Python warning, through the ``warnings`` module).
DEPRECATED = "DNS_RESOLVER=traverse_crawl.egress.resolver.PinnedResolver"


def json_lines(stderr: str) -> list[dict[str, Any]]:
    lines = []
    for text in stderr.splitlines():
        line = json.loads(text)  # every line, or the test fails here naming it
        assert isinstance(line, dict) and FIELDS <= line.keys(), text
        assert UTC.match(line["time"]), text
        lines.append(line)
    return lines


def failing_site(server: Server, tmp_path: Path) -> tuple[Path, str]:
    server.site(
        {
            "/robots.txt": Reply(status=500),
            "/": '<a href="/missing">gone</a> <a href="/ok">ok</a>',
            "/ok": "fine",
            "/missing": Reply(status=404, body="not here"),
        }
    )
    dead = f"http://127.0.0.1:{free_port()}"
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"site\t{server.url('/')}\ndead\t{dead}/\n", encoding="utf-8")
    return seeds, dead


def test_every_line_of_a_failing_crawl_is_json_with_its_page(server, tmp_path):
    seeds, dead = failing_site(server, tmp_path)
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin, dead),
        "-a", f"seeds={seeds}", "-s", "TRAVERSE_LOG_FORMAT=json", "-s", "LOG_LEVEL=DEBUG",
        "-s", "RETRY_TIMES=0", "-s", DEPRECATED,
        python_flags=("-W", "always"),  # Scrapy leaves warnings alone under -W
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = json_lines(run.stderr)
    levels = {line["level"] for line in lines}
    assert {"DEBUG", "INFO", "WARNING"} <= levels
    missing = server.url("/missing")
    crawled = [x for x in lines if x["message"].startswith("Crawled (404)")]
    assert [(x.get("seed"), x.get("url")) for x in crawled] == [("site", missing)]
    about_dead = [x for x in lines if x.get("url") == f"{dead}/"]
    assert about_dead and all(x.get("seed") == "dead" for x in about_dead)
    assert any(x["message"].startswith("page failed") for x in about_dead)
    warned = [x for x in lines if x["logger"] == "py.warnings"]
    assert len(warned) == 1 and "DNS_RESOLVER setting is deprecated" in warned[0]["message"]
    assert any("fail-open" in x["message"] and x["level"] == "WARNING" for x in lines)
    manifests = [x for x in lines if x["message"].startswith("manifest for seed")]
    assert sorted(x["seed"] for x in manifests) == ["dead", "site"]


SPIDER = """
import scrapy


class BrokenSpider(scrapy.Spider):
    name = "broken"

    async def start(self):
        yield scrapy.Request(self.url)

    def parse(self, response):
        return 1 / 0
"""


def test_a_callback_traceback_is_inside_its_line(server, tmp_path):
    server.site({"/": "home"})
    root = make_project(tmp_path / "project")
    (root / "shop" / "spiders" / "broken.py").write_text(SPIDER, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "broken", "-a", f"url={server.url('/')}",
         *crawl_args(tmp_path, server.origin), "-s", "TRAVERSE_LOG_FORMAT=json"],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    lines = json_lines(run.stderr)
    [error] = [x for x in lines if x["message"].startswith("Spider error processing")]
    assert error["level"] == "ERROR" and error["url"] == server.url("/")
    assert error["exc"].startswith("Traceback (most recent call last):")
    assert "ZeroDivisionError: division by zero" in error["exc"]


def test_text_format_is_scrapys(server, tmp_path):
    seeds, dead = failing_site(server, tmp_path)
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin, dead),
        "-a", f"seeds={seeds}", "-s", "RETRY_TIMES=0",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    scrapy_line = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[[\w.]+\] [A-Z]+: ")
    lines = run.stderr.splitlines()
    assert scrapy_line.match(lines[0]) and "Scrapy" in lines[0] and "started" in lines[0]
    assert not any(line.startswith('{"time"') for line in lines)


def test_a_bad_value_is_named_and_a_bad_argument_is_a_json_line(server, tmp_path):
    base = [
        "crawl",
        "traverse",
        *crawl_args(tmp_path, server.origin),
        "-a",
        f"url={server.url('/')}",
    ]
    run = scrapy(*base, "-s", "TRAVERSE_LOG_FORMAT=xml")
    assert run.returncode == 2
    assert "TRAVERSE_LOG_FORMAT: expected one of 'text', 'json', got 'xml'" in run.stderr
    for bad in (["-a", "source-id=x"], ["-s", "LOG_LEVEL=LOUD"]):
        run = scrapy(*base, "-s", "TRAVERSE_LOG_FORMAT=json", *bad)
        assert run.returncode == 2, run.stderr
        errors = [x for x in json_lines(run.stderr) if x["level"] == "ERROR"]
        assert len(errors) == 1, run.stderr
    assert server.hits == []
