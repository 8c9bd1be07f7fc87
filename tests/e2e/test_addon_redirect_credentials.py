"""A user's login form behind the add-on: what each redirect hop sends, and to whom.

A user project's spider posts a form with its session cookie and an Authorization
header to one loopback server, which answers with a redirect to a second server (a
different host and port: ``localhost`` against ``127.0.0.1``) or to itself. The hit
logs of both servers show the method, body and headers each hop carried.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import scrapy_env
from tests.support.server import Hit, Reply, Server, run

SPIDER = """
import json

import scrapy


class LoginSpider(scrapy.Spider):
    name = "login"

    async def start(self):
        for line in open(self.plan, encoding="utf-8"):
            step = json.loads(line)
            yield scrapy.FormRequest(
                step["url"], method=step["method"], formdata={"user": "ann", "password": "hunter2"},
                headers={"Cookie": "sid=s3cr3t", "Authorization": "Bearer t0ken"},
                callback=self.landed, dont_filter=True,
            ) if step["method"] == "POST" else scrapy.Request(
                step["url"], method=step["method"],
                headers={"Cookie": "sid=s3cr3t", "Authorization": "Bearer t0ken"},
                callback=self.landed, dont_filter=True,
            )

    def landed(self, response):
        yield {"url": response.url, "status": response.status}
"""

# The spider sets its Cookie header itself, which Scrapy's cookie middleware would
# replace with its jar's: the project turns the middleware off, as Scrapy's docs say.
SETTINGS = """
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
ADDONS = {"traverse_crawl.Addon": 100}
COOKIES_ENABLED = False
"""


@pytest.fixture
def other_host() -> Iterator[Server]:
    """A second server, reached by the name ``localhost``: another host for cookies."""
    yield from run(Server("127.0.0.1"))


def crawl(root: Path, steps: list[dict[str, str]], *origins: str) -> list[dict[str, object]]:
    spiders = root / "shop" / "spiders"
    spiders.mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (spiders / "__init__.py").write_text("", encoding="utf-8")
    (spiders / "login.py").write_text(SPIDER, encoding="utf-8")
    plan = root / "plan.jsonl"
    plan.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
    items = root / "items.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "login", "-a", f"plan={plan}",
         "-s", f"TRAVERSE_STORE={root / 'store'}", "-s", "TRAVERSE_MIN_DELAY=0",
         "-s", f"TRAVERSE_EGRESS_ALLOW={json.dumps(list(origins))}",
         "-s", "LOGSTATS_INTERVAL=0", "-O", str(items)],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in items.read_text(encoding="utf-8").splitlines()]


def landing(other: Server, status: int) -> Hit:
    [hit] = [h for h in other.hits if h.path == f"/landing/{status}"]
    return hit


def test_a_form_redirected_to_another_host_sends_it_neither_body_nor_credentials(
    server, other_host, tmp_path
):
    other = other_host
    elsewhere = f"http://localhost:{other.server_address[1]}"
    for status in (301, 302, 303, 307, 308):
        server.routes[f"/login/{status}"] = Reply(
            status, headers={"Location": f"{elsewhere}/landing/{status}"}
        )
    other.fallback = Reply(body="<p>welcome</p>")
    steps = [
        {"url": server.url(f"/login/{s}"), "method": "POST"} for s in (301, 302, 303, 307, 308)
    ]
    items = crawl(tmp_path / "project", steps, server.origin, elsewhere)

    assert sorted(item["url"] for item in items) == sorted(
        f"{elsewhere}/landing/{s}" for s in (301, 302, 303, 307, 308)
    )
    for login in (h for h in server.hits if h.path.startswith("/login/")):
        assert login.method == "POST" and b"password=hunter2" in login.body
        assert login.headers["Cookie"] == "sid=s3cr3t"
    for status in (301, 302, 303):
        hit = landing(other, status)
        assert (hit.method, hit.body) == ("GET", b""), status
        assert "Content-Type" not in hit.headers, status
    for status in (307, 308):  # the method and body are repeated, as RFC 9110 says
        hit = landing(other, status)
        assert hit.method == "POST" and b"password=hunter2" in hit.body, status
    for status in (301, 302, 303, 307, 308):
        hit = landing(other, status)
        assert "Cookie" not in hit.headers, status
        assert "Authorization" not in hit.headers, status


def test_credentials_follow_a_redirect_on_the_same_origin_only(server, tmp_path):
    server.routes["/old"] = Reply(307, headers={"Location": "/new"})
    server.routes["/get-old"] = Reply(302, headers={"Location": "/get-new"})
    server.fallback = Reply(body="<p>page</p>")
    steps = [
        {"url": server.url("/old"), "method": "POST"},
        {"url": server.url("/get-old"), "method": "GET"},
    ]
    crawl(tmp_path / "project", steps, server.origin)
    [new] = [h for h in server.hits if h.path == "/new"]
    assert new.method == "POST" and b"password=hunter2" in new.body
    assert new.headers["Cookie"] == "sid=s3cr3t"
    assert new.headers["Authorization"] == "Bearer t0ken"
    [get_new] = [h for h in server.hits if h.path == "/get-new"]
    assert get_new.method == "GET"
    assert get_new.headers["Cookie"] == "sid=s3cr3t"


def test_a_get_redirected_to_another_host_loses_the_cookie(server, other_host, tmp_path):
    other = other_host
    elsewhere = f"http://localhost:{other.server_address[1]}"
    server.routes["/go"] = Reply(302, headers={"Location": f"{elsewhere}/landing/302"})
    other.fallback = Reply(body="<p>there</p>")
    crawl(
        tmp_path / "project",
        [{"url": server.url("/go"), "method": "GET"}],
        server.origin,
        elsewhere,
    )
    hit = landing(other, 302)
    assert hit.method == "GET"
    assert "Cookie" not in hit.headers
    assert "Authorization" not in hit.headers
