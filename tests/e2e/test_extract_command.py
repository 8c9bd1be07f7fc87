"""Extraction from the command line: ``scrapy crawl`` with ``TRAVERSE_EXTRACT``, ``scrapy
extract`` re-run offline with changed rules, ``--verify`` on honest and tampered files,
``FEEDS`` selecting the items, and bad rules stopping before any request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server


def setup(tmp_path: Path, rules: str = product_site.RULES) -> list[str]:
    (tmp_path / "extract.toml").write_text(rules, encoding="utf-8")
    return [
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
    ]  # fmt: skip


def capture(server: Server, tmp_path: Path, *more: str) -> Path:
    server.site(product_site.PAGES)
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *setup(tmp_path),
        "-a", f"url={server.url('/')}", "-a", "source_id=site", *more,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (path,) = (tmp_path / "items").glob("*.jsonl")
    return path


def canonical(lines: list[str]) -> list[str]:
    return sorted(json.dumps(json.loads(line), sort_keys=True) for line in lines)


def test_feeds_select_the_extracted_items_and_the_file_holds_the_same(server, tmp_path):
    feeds = json.dumps(
        {str(tmp_path / "feed.jsonl"): {"format": "jsonlines",
                                        "item_classes": ["traverse_crawl.ExtractedItem"]}}
    )  # fmt: skip
    path = capture(server, tmp_path, "-s", f"FEEDS={feeds}")
    items = path.read_text(encoding="utf-8").splitlines()
    feed = (tmp_path / "feed.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(items) == 5
    assert canonical(feed) == canonical(items)  # the same items, in arrival order
    assert all("evidence" in json.loads(line) for line in feed)  # no page item among them


def test_the_stats_file_names_each_seeds_items_file(server, tmp_path):
    stats = tmp_path / "stats.json"
    path = capture(server, tmp_path, "-s", f"TRAVERSE_STATS_FILE={stats}")
    (seed,) = json.loads(stats.read_text(encoding="utf-8"))["seeds"]
    assert seed["itemsFile"] == str(path)
    assert seed["manifest"] == str(next((tmp_path / "manifests").glob("*.json")))


def test_extract_reruns_offline_with_changed_rules(server, tmp_path):
    path = capture(server, tmp_path)
    before = path.read_bytes()
    server.shutdown()  # nothing to connect to: the items come from the store
    server.server_close()
    rules = product_site.RULES.replace('title = "css:h2::text"', 'title = "xpath:.//h2/text()"\n'
                                       'first_tag = "css:.tag::text"')  # fmt: skip
    run = scrapy("extract", *setup(tmp_path, rules))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("seed site: 5 item(s) from 5 page(s) -> ")
    after = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [item["fields"].get("first_tag") for item in after] == [
        "home",
        None,
        "kitchen",
        None,
        None,
    ]
    assert [item["fields"].get("title") for item in after[:3]] == ["Lamp", "Lamp", "Salt & Pepper"]
    assert after[0]["evidence"]["title"][0]["selector"] == "xpath:.//h2/text()"
    assert after[0]["extractor"] != json.loads(before.splitlines()[0])["extractor"]
    # The old rules again: the very bytes the crawl wrote.
    again = scrapy("extract", *setup(tmp_path), "site")
    assert again.returncode == 0, again.stderr
    assert path.read_bytes() == before


def test_verify_passes_on_honest_files_and_names_each_edit(server, tmp_path):
    path = capture(server, tmp_path)
    run = scrapy("extract", *setup(tmp_path), "--verify", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "5 item(s)" in run.stdout and "evidence entries verified" in run.stdout

    items = [json.loads(line) for line in path.read_bytes().splitlines()]
    items[0]["fields"]["price"] = 999.0  # an edited value
    items[1]["evidence"]["title"][0]["text"] = "Lump"  # an edited evidence text
    items[3]["evidence"]["name"][0]["span"] = [0, 4]  # a span moved elsewhere
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    run = scrapy("extract", *setup(tmp_path), "--verify", str(tampered))
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert len(lines) == 3, run.stdout
    assert "line 1 (type 'card'" in lines[0] and "field 'price'" in lines[0]
    assert "the value 999.0 is not what the rules give (1299.0)" in lines[0]
    # The evidence is compared with what the rules read from the snapshot again.
    assert "line 2 (type 'card'" in lines[1] and "field 'title'" in lines[1]
    assert "the text 'Lump' is not what the rules give ('Lamp')" in lines[1]
    assert "line 4 (type 'product'" in lines[2] and "field 'name'" in lines[2]
    assert "the span [0, 4] is not what the rules give (" in lines[2]
    assert "3 mismatch(es) in 5 item(s)" in run.stderr


@pytest.mark.parametrize(
    ("rules", "line"),
    [
        (product_site.RULES.replace("re = '([0-9.,]+)'", "re = '([0-9.,]+'"),
         "error: TRAVERSE_EXTRACT: type 'card', field 'price': invalid regular expression"),
        (product_site.RULES.replace('name = "css:h1::text"', 'name = "css:h1::txt("'),
         "error: TRAVERSE_EXTRACT: type 'product', field 'name': invalid CSS selector"),
        (product_site.RULES.replace("many = true", "many = true, join = ','"),
         "error: TRAVERSE_EXTRACT: type 'card', field 'tags': unknown key 'join'"),
    ],
)  # fmt: skip
def test_bad_rules_exit_2_before_any_request(server, tmp_path, rules, line):
    server.site(product_site.PAGES)
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *setup(tmp_path, rules),
        "-a", f"url={server.url('/')}",
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    errors = [x for x in run.stderr.splitlines() if "error:" in x]
    assert len(errors) == 1 and line in errors[0], run.stderr
    assert server.hits == []
    offline = scrapy("extract", *setup(tmp_path, rules))
    assert offline.returncode == 2
    assert offline.stderr.startswith(line)


def test_a_resumed_crawl_writes_the_items_file_of_an_uninterrupted_one(server, tmp_path):
    (tmp_path / "whole").mkdir()
    whole = capture(server, tmp_path / "whole").read_bytes()
    job = ("-s", f"JOBDIR={tmp_path / 'job'}", "-s", "CONCURRENT_REQUESTS=1")
    stopped = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *setup(tmp_path),
        "-a", f"url={server.url('/')}", "-a", "source_id=site", *job,
        "-s", "CLOSESPIDER_PAGECOUNT=3",
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stderr[-2000:]
    (path,) = (tmp_path / "items").glob("*.jsonl")
    assert len(path.read_bytes().splitlines()) < 5
    hits = len(server.hits)
    resumed = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), *setup(tmp_path), *job
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed with" in resumed.stderr
    assert len(server.hits) - hits < 5  # the pages recorded before the stop were not fetched
    # Their items come from the store: the very file of the crawl that was never stopped.
    whole_items = [json.loads(line) for line in whole.splitlines()]
    items = [json.loads(line) for line in path.read_bytes().splitlines()]
    strip = ("sourceRef",)
    assert [{k: v for k, v in i.items() if k not in strip} for i in items] == [
        {k: v for k, v in i.items() if k not in strip} for i in whole_items
    ]
    refs = {p["url"]: p["sourceRef"] for p in json.loads(
        next((tmp_path / "manifests").glob("*.json")).read_text(encoding="utf-8"))["pages"]
        if "sourceRef" in p}  # fmt: skip
    assert all(item["sourceRef"] == refs[item["url"]] for item in items)
