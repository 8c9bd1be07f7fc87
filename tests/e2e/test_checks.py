"""Checks from the command line: one crawl with extraction and checks that fail on
purpose (exit 3), their evidence resolved to the stored bytes, the same results offline
with the server gone, at another concurrency and in replay; a bad checks file stops the
crawl before any request (exit 2)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.server import Reply, Server
from traverse_crawl import open_snapshot_store

CHECKS = """
[crawl]
min_pages = 3
max_share = { http-error = 0.1, timeout = 0.0 }
[items.card]
min_items = 3
coverage = { price = 0.9, title = 1.0 }
distinct = ["title"]
[items.card.values]
price = { min = 10 }
[items.product.values]
sku = { pattern = '[A-Z]-[0-9]+' }
"""
FAILING = {
    "crawl.max_share.http-error",
    "items.card.coverage.price",
    "items.card.distinct.title",
}
HOME = product_site.HOME.replace("</body>", '<a href="/gone.html">gone</a></body>')
PAGES = {**product_site.PAGES, "/": HOME}


def settings(tmp_path: Path, checks: str = CHECKS) -> list[str]:
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    (tmp_path / "checks.toml").write_text(checks, encoding="utf-8")
    return [
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_CHECKS={tmp_path / 'checks.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
    ]  # fmt: skip


def crawl(server: Server, tmp_path: Path, *more: str) -> Any:
    return scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *settings(tmp_path),
        "-a", f"url={server.url('/')}", "-a", "source_id=site", *more,
    )  # fmt: skip


def checks_file(tmp_path: Path) -> Path:
    (path,) = (tmp_path / "manifests").glob("*.checks.json")
    return path


def test_checks_fail_with_evidence_offline_and_in_replay_alike(server, tmp_path):
    server.site(PAGES)
    stats = tmp_path / "stats.json"
    run = crawl(server, tmp_path, "-s", f"TRAVERSE_STATS_FILE={stats}")
    assert run.returncode == 3, run.stderr
    path = checks_file(tmp_path)
    assert path.name.endswith(".checks.json")
    assert path.with_name(path.name.replace(".checks.json", ".json")).is_file()
    doc = json.loads(path.read_text(encoding="utf-8"))
    by_check = {r["check"]: r for r in doc["results"]}
    assert {c for c, r in by_check.items() if not r["passed"]} == FAILING
    assert doc["failed"] == len(FAILING) and doc["passed"] is False
    assert by_check["crawl.max_share.http-error"]["measured"] == 1 / 6
    assert by_check["crawl.max_share.http-error"]["examples"] == [
        {"url": server.url("/gone.html"), "field": "outcome", "value": "http-error 404"}
    ]
    assert by_check["items.card.min_items"]["measured"] == 3
    assert by_check["items.card.values.price"]["passed"]  # 1299 and 15; "call us" is no value
    assert by_check["items.product.values.sku"]["passed"]
    # Every example's sourceRef names the stored bytes, and its span the text there.
    store = open_snapshot_store(str(tmp_path / "store"))
    spans = 0
    for result in doc["results"]:
        for example in result.get("examples", []):
            if "sourceRef" not in example:
                continue
            snapshot = store.get_by_source_ref(example["sourceRef"])
            assert snapshot is not None and snapshot["url"] == example["url"]
            if "span" in example:
                start, end = example["span"]
                assert snapshot["body"][start:end] == example["text"]
                spans += 1
    assert spans >= 2  # the price "call us" and the repeated title "Lamp"
    price = by_check["items.card.coverage.price"]["examples"]
    assert [(e["value"], e["text"]) for e in price] == [(None, "call us")]
    assert [e["value"] for e in by_check["items.card.distinct.title"]["examples"]] == ["Lamp"]
    # One WARNING line per failing check; the stats file names them.
    lines = [line for line in run.stderr.splitlines() if "WARNING" in line and "check " in line]
    assert len(lines) == len(FAILING)
    assert any("items.card.coverage.price" in line and "call us" not in line for line in lines)
    (seed,) = json.loads(stats.read_text(encoding="utf-8"))["checks"]
    assert sorted(seed["failed"]) == sorted(FAILING)

    # Offline, with the server gone: the same bytes and the same exit status.
    first = path.read_bytes()
    server.shutdown()
    server.server_close()
    path.unlink()
    offline = scrapy("checks", *settings(tmp_path))
    assert offline.returncode == 3, offline.stderr
    assert path.read_bytes() == first
    assert "seed site: 6 passed, 3 failed" in offline.stdout
    assert offline.stdout.count("failed: measured") == len(FAILING)
    # The items file of this run as fixtures: every field equal; then a selector change
    # names the field, with its new evidence; a sourceRef not in the store is one line.
    (items,) = (tmp_path / "items").glob("*.jsonl")
    fixtures = scrapy("extract", *settings(tmp_path), "--fixtures", str(items))
    assert fixtures.returncode == 0, fixtures.stdout + fixtures.stderr
    assert fixtures.stdout.count(": equal (") == 5
    assert "5 fixture(s): 22 field(s) equal, 0 changed, 0 missing, 0 fixture(s) not found" in (
        fixtures.stdout
    )
    changed = product_site.RULES.replace('title = "css:h2::text"', 'title = "css:h2::attr(id)"')
    changed = changed.replace('name = "css:h1::text"', 'name = "css:title::text"')
    (tmp_path / "extract.toml").write_text(changed, encoding="utf-8")
    lines = [*items.read_text(encoding="utf-8").splitlines(), json.dumps(
        {"type": "card", "sourceRef": "traverse-snapshot:nowhere", "fields": {}}
    )]  # fmt: skip
    (tmp_path / "fixtures.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fixtures = scrapy(
        "extract", "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
        "--fixtures", str(tmp_path / "fixtures.jsonl"),
    )  # fmt: skip
    assert fixtures.returncode == 1
    out = fixtures.stdout
    assert out.count("field 'title': missing (was 'Lamp')") == 2
    assert "field 'title': missing (was 'Salt & Pepper'); the selector matched nothing" in out
    assert "field 'name': changed 'Lamp\\ntwo' → 'Lamp two'; now text 'Lamp two' at [" in out
    assert out.count(": equal (5 field(s))") == 1  # the first product's name is its title
    assert out.count("not found: no snapshot traverse-snapshot:nowhere in the store") == 1
    assert "0 changed" not in fixtures.stderr and "1 fixture(s) not found" in fixtures.stderr
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")

    # The report shows the checks with their sourceRefs.
    report = scrapy("report", str(tmp_path / "manifests"), "-o", str(tmp_path / "r.html"))
    assert report.returncode == 0, report.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<span class="checks-failed">3</span>' in html
    assert "items.card.coverage.price" in html and "traverse-snapshot:" in html

    # A rules change tried on yesterday's capture: a check that now passes.
    loose = CHECKS.replace("http-error = 0.1", "http-error = 0.2")
    (tmp_path / "loose.toml").write_text(loose, encoding="utf-8")
    tried = scrapy(
        "checks", *settings(tmp_path), "-s", f"TRAVERSE_CHECKS={tmp_path / 'loose.toml'}"
    )
    assert tried.returncode == 3 and "seed site: 7 passed, 2 failed" in tried.stdout
    # Replay of the capture: the same results, but for max_share on its own outcomes.
    replay = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path), *settings(tmp_path, CHECKS),
        "-s", "TRAVERSE_MODE=replay", "-s", "CONCURRENT_REQUESTS=1",
        "-a", f"url={server.url('/')}", "-a", "source_id=site",
    )  # fmt: skip
    assert replay.returncode == 3, replay.stderr
    again = json.loads(checks_file(tmp_path).read_text(encoding="utf-8"))

    def same(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [r for r in results if not r["check"].startswith("crawl.max_share")]

    assert same(again["results"]) == same(doc["results"])


def test_the_same_results_at_one_request_at_a_time(server, tmp_path):
    server.site(PAGES)
    wide = tmp_path / "wide"
    narrow = tmp_path / "narrow"
    for where, concurrency in ((wide, "16"), (narrow, "1")):
        where.mkdir()
        run = crawl(server, where, "-s", f"CONCURRENT_REQUESTS={concurrency}")
        assert run.returncode == 3, run.stderr

    # The same results; each example's sourceRef names its own capture's snapshot.
    def results(where: Path) -> str:
        text = checks_file(where).read_text(encoding="utf-8")
        return re.sub(r'"traverse-snapshot:[^"]*"', "REF", text)

    assert results(wide) == results(narrow)
    assert results(wide).count("REF") >= 2


def test_a_bad_checks_file_stops_before_any_request(server, tmp_path):
    server.site(PAGES)
    bad = CHECKS.replace('distinct = ["title"]', 'distinct = ["colour"]')
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *settings(tmp_path, bad),
        "-a", f"url={server.url('/')}",
    )  # fmt: skip
    assert run.returncode == 2
    assert "TRAVERSE_CHECKS: items.card.distinct.colour" in run.stderr
    assert server.hits == []
    offline = scrapy("checks", *settings(tmp_path, bad))
    assert (
        offline.returncode == 2 and "TRAVERSE_CHECKS: items.card.distinct.colour" in offline.stderr
    )


def test_item_checks_not_evaluated_when_the_items_file_is_lost(server, tmp_path):
    items = tmp_path / "items"

    def gone(_request: object) -> Reply:  # the items directory's disk swapped out
        if items.is_dir():
            shutil.rmtree(items)
            items.write_text("a file where the directory was", encoding="utf-8")
        return Reply(body=product_site.ITEM_2)

    server.site(PAGES)
    server.routes["/shop/item/2.html"] = gone
    run = crawl(server, tmp_path)
    assert run.returncode == 1, run.stderr  # lost: 1 wins over 3
    doc = json.loads(checks_file(tmp_path).read_text(encoding="utf-8"))
    for result in doc["results"]:
        if result["check"].startswith("items."):
            assert (result["passed"], result["measured"]) == (False, None)
            assert result["reason"] == "the items file was not written"
        else:
            assert result["measured"] is not None
