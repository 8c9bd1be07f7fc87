"""``scrapy diff --items`` and ``scrapy report`` on the items two real crawls extracted:
a loopback shop captured with ``TRAVERSE_EXTRACT``, edited, and captured again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server

pytest.importorskip("traverse_crawl.extraction", reason="needs the extraction package")

RULES = """
[[types]]
name = "card"
each = "css:div.card"
[types.fields]
title = "css:h2::text"
price = { selector = "css:.price::text", type = "number" }
tags = { selector = "css:.tag::text", many = true }
"""


def shop(*cards: tuple[str, str, list[str]]) -> str:
    rows = "".join(
        f'<div class="card"><h2>{title}</h2><span class="price">{price}</span>'
        + "".join(f'<span class="tag">{t}</span>' for t in tags)
        + "</div>"
        for title, price, tags in cards
    )
    return f"<html><body>{rows}</body></html>"


def capture(server: Server, tmp_path: Path, name: str) -> Path:
    rules = tmp_path / "extract.toml"
    rules.write_text(RULES, encoding="utf-8")
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=shop",
        *crawl_args(tmp_path / name, server.origin),
        "-s", f"TRAVERSE_EXTRACT={rules}", "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / name / 'items'}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp_path / name


def test_what_changed_in_the_data_between_two_real_captures(server, tmp_path):
    server.site({"/": shop(("Boots", "120.00", []), ("Hat", "20.00", ["wool", "red"]))})
    monday = capture(server, tmp_path, "monday")
    server.site(
        {
            "/": shop(
                ("Boots", "120.00", []), ("Hat", "18.50", ["wool"]), ("Gloves", "9.00", ["wool"])
            )
        }
    )
    tuesday = capture(server, tmp_path, "tuesday")

    run = scrapy("diff", "--items", "--exit-code", str(monday / "items"), str(tuesday / "items"))
    assert run.returncode == 1, run.stderr
    assert run.stderr == ""
    url = server.url("/")
    assert run.stdout == (
        "1 added, 0 removed, 1 changed, 1 unchanged\n"
        "added (1):\n"
        f"  card[2] {url}\n"
        '      title: "Gloves"\n'
        "      price: 9.0\n"
        '      tags: ["wool"]\n'
        "changed (1):\n"
        f"  card[1] {url}\n"
        "      price: 20.0 → 18.5\n"
        '      tags: ["wool", "red"] → ["wool"]\n'
    )
    data = json.loads(scrapy("diff", "--items", "--json", str(monday / "items"),
                             str(tuesday / "items")).stdout)  # fmt: skip
    (tuesday_manifest,) = (tuesday / "manifests").glob("*.json")
    page = json.loads(tuesday_manifest.read_text())["pages"][0]
    assert data["items"][0]["new"]["sourceRef"] == page["sourceRef"]
    assert data["items"][0]["new"]["pageId"] == page["id"]

    out = tmp_path / "report.html"
    report = scrapy("report", str(tuesday / "manifests"), "-o", str(out),
                    "-s", f"TRAVERSE_ITEMS_DIR={tuesday / 'items'}")  # fmt: skip
    assert report.returncode == 0, report.stderr
    html = out.read_text()
    assert '<h3>Extracted items (<span class="items-total">3</span>)</h3>' in html
    assert "1 of the manifest's 1 html page(s) yielded items." in html
    row = '<tr><td>card</td><td>tags</td><td class="n">1</td><td class="n">33 %</td></tr>'
    assert row in html  # Boots has no tag
    assert "snapshots this manifest does not name" not in html
