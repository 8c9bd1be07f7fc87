"""The egress guard under ``scrapy crawl``: Scrapy itself installs the pinning resolver."""

from __future__ import annotations

import json
from typing import Any

from tests.component.egress.test_egress_guard import refusal
from tests.support.cli import crawl_args, scrapy


def test_scrapy_crawl_refuses_loopback_unless_its_origin_is_allowed(server, tmp_path):
    server.site({"/": "<p>home</p>"})
    url = server.url("/")

    def run(name: str, *origins: str) -> tuple[Any, dict[str, Any]]:
        feed = tmp_path / f"{name}.jsonl"
        args = crawl_args(tmp_path / name, *origins)
        done = scrapy("crawl", "traverse", "-a", f"url={url}", *args, "-O", str(feed))
        assert done.returncode == 0, done.stderr
        (item,) = [json.loads(line) for line in feed.read_text().splitlines()]
        return done, item

    refused, item = run("refused")
    message = refusal(url, "127.0.0.1 is a loopback address")
    assert item["fetch"] == {"error": {"kind": "egress-denied", "message": message}}
    assert server.paths() == []
    assert "'egress/denied': 1" in refused.stderr
    # TWISTED_DNS_RESOLVER names PinnedResolver, so Scrapy installed it, not the guard.
    assert "installed traverse_crawl.egress.resolver.PinnedResolver" not in refused.stderr
    assert "ScrapyDeprecationWarning" not in refused.stderr

    allowed, item = run("allowed", server.origin)
    assert item["fetch"]["snapshot"]["url"] == url
    assert server.count("/") == 1
    assert "'egress/allowed_by_setting'" in allowed.stderr
