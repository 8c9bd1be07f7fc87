"""``scrapy extract`` over a store it cannot trust: a page whose one XPath call runs for
tens of seconds is stopped at the crawl's hard bound, a body changed since its capture
gives no items and exit status 1, and seed ids from a shared bucket's manifests reach
the terminal with their control characters escaped."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server
from traverse_crawl.snapshots.file_text import encode
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

# One XPath quadratic in the page's nodes: about 40 s of one lxml call on /huge.
QUADRATIC_RULES = """
[[types]]
name = "page"
[types.fields.later]
selector = "xpath:count(//div[count(preceding::div) >= count(following::div)])"
type = "integer"
"""


def capture(server: Server, tmp_path: Path, pages: dict[str, str], *more: str) -> None:
    server.site(pages)
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin),
        "-a", f"url={server.url('/')}", "-a", "source_id=site", *more,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr


def extract(
    tmp_path: Path, rules: str, *more: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "extract.toml").write_text(rules, encoding="utf-8")
    return scrapy(
        "extract", *crawl_args(tmp_path),
        "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}", *more, timeout=timeout,
    )  # fmt: skip


def items_of(tmp_path: Path) -> list[dict[str, Any]]:
    (path,) = (tmp_path / "items").glob("*.jsonl")
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_a_page_past_the_bound_inside_one_lxml_call_is_stopped(server, tmp_path):
    divs = "".join(f"<div>{i}</div>" for i in range(3))
    capture(server, tmp_path, {
        "/": '<a href="/huge">h</a><a href="/one">1</a><a href="/two">2</a>' + divs,
        "/huge": "<div>x</div>" * 60_000, "/one": divs, "/two": divs * 2,
    })  # fmt: skip
    started = time.monotonic()
    run = extract(tmp_path, QUADRATIC_RULES, "-s", "TRAVERSE_EXTRACT_TIMEOUT=1", timeout=40)
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert took < 25, took
    warnings = [line for line in run.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {server.url('/huge')}: extraction stopped after 1 s "
        "(TRAVERSE_EXTRACT_TIMEOUT); no items from this page"
    ]
    # The pages after it are extracted by another process, with their items.
    assert sorted((i["url"], i["fields"]["later"]) for i in items_of(tmp_path)) == sorted(
        [(server.url("/"), 2), (server.url("/one"), 2), (server.url("/two"), 3)]
    )


def test_a_body_changed_since_its_capture_gives_no_items_and_exit_1(server, tmp_path):
    capture(server, tmp_path, product_site.PAGES)
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    (listing,) = [s for s in store.walk() if s["url"].endswith("/shop/list.html")]
    changed = {**listing, "body": listing["body"].replace("$15", "$1")}  # bodyHash kept
    Path(store.path(listing)).write_bytes(encode(changed))  # type: ignore[arg-type]
    run = extract(tmp_path, product_site.RULES)
    assert run.returncode == 1, run.stderr
    assert run.stdout.startswith("seed site: 2 item(s) from 4 page(s) -> ")
    (warning,) = [x for x in run.stderr.splitlines() if "bodyHash" in x]
    assert warning.startswith(f"warning: {server.url('/shop/list.html')}: the stored body of ")
    assert warning.endswith("does not match its bodyHash (changed since the capture); no items "
                            "from this page")  # fmt: skip
    assert [i["type"] for i in items_of(tmp_path)] == ["product", "product"]


def test_seed_ids_from_manifests_are_printed_with_controls_escaped(server, tmp_path):
    capture(server, tmp_path, product_site.PAGES)
    (path,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(path.read_bytes())
    manifest["seed"]["id"] = "site\x1b]0;owned\x07\x1b[2J\r"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    run = extract(tmp_path, product_site.RULES)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "\r" not in run.stdout
    assert run.stdout.startswith("seed site\\x1b]0;owned\\x07\\x1b[2J\\x0d: 5 item(s)")
