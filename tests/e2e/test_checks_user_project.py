"""A user's own project with the add-on and TRAVERSE_CHECKS: its own item class checked
by class name, its pages by outcome, exit status 3, examples that name the stored bytes."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.e2e.test_addon_project import make_project
from tests.support.cli import scrapy_env
from tests.support.server import Reply
from traverse_crawl import open_snapshot_store

SPIDER = """
import scrapy


class Product(scrapy.Item):
    name = scrapy.Field()
    price = scrapy.Field()
    sourceRef = scrapy.Field()


class PlainSpider(scrapy.Spider):
    name = "plain"

    async def start(self):
        yield scrapy.Request(self.url)

    def parse(self, response):
        name = response.css("h1::text").get()
        if name:
            yield Product(name=name, price=response.css(".price::text").get())
        yield from response.follow_all(css="a")
"""

CHECKS = """
[crawl]
max_share = { http-error = 0.2 }
[items.Product]
min_items = 2
coverage = { price = 1.0 }
distinct = ["name"]
"""


def test_a_user_spider_gets_its_own_items_checked(server, tmp_path):
    server.site(
        {
            "/robots.txt": Reply(body="User-agent: *\nAllow: /\n", content_type="text/plain"),
            "/": '<a href="/p1">1</a> <a href="/p2">2</a> <a href="/gone">g</a>',
            "/p1": '<h1>Lamp</h1><p class="price">10</p>',
            "/p2": "<h1>Chair</h1>",
        }
    )
    root = make_project(tmp_path / "project")
    (root / "shop" / "spiders" / "plain.py").write_text(SPIDER, encoding="utf-8")
    (tmp_path / "checks.toml").write_text(CHECKS, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "plain", "-a", f"url={server.url('/')}",
         "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
         "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
         "-s", f"TRAVERSE_CHECKS={tmp_path / 'checks.toml'}",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0"],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 3, run.stderr[-3000:]
    (path,) = (tmp_path / "manifests").glob("*.checks.json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["seed"] == {"id": "plain", "url": None}
    by_check = {r["check"]: r for r in doc["results"]}
    share = by_check["crawl.max_share.http-error"]
    assert (share["measured"], share["over"], share["passed"]) == (0.25, 4, False)
    assert share["examples"] == [
        {"url": server.url("/gone"), "field": "outcome", "value": "http-error 404"}
    ]
    assert by_check["items.Product.min_items"]["passed"]
    assert by_check["items.Product.distinct.name"]["passed"]
    coverage = by_check["items.Product.coverage.price"]
    assert (coverage["measured"], coverage["passed"]) == (0.5, False)
    (example,) = coverage["examples"]
    assert (example["url"], example["field"]) == (server.url("/p2"), "price")
    assert example["value"] is None
    snapshot = open_snapshot_store(str(tmp_path / "store")).get_by_source_ref(example["sourceRef"])
    assert snapshot is not None and "<h1>Chair</h1>" in snapshot["body"]
    assert "check items.Product.coverage.price of seed 'plain' failed" in run.stderr
    assert "2 check(s) failed: exit status 3" in run.stderr
