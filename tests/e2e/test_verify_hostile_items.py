"""``scrapy extract --verify`` on items files written by someone else: a value is verified
only when the rules of ``TRAVERSE_EXTRACT`` give it again from the stored bytes, so a
forged value, node, selector or regular expression, a sourceRef that leaves the store,
a field with thousands of entries, a huge value and lines that are not items are each a
mismatch line, bounded in time and length, never a pass and never a traceback."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import product_site
from tests.support.cli import crawl_args, scrapy
from tests.support.server import serve
from traverse_crawl import Extractor
from traverse_crawl.snapshots import model
from traverse_crawl.snapshots.file_text import encode
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

LINE = 1000  # docs/extraction.md: a mismatch line is at most this long


def settings(root: Path) -> list[str]:
    return [
        "-s", f"TRAVERSE_EXTRACT={root / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={root / 'items'}",
        "-s", f"TRAVERSE_STORE={root / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={root / 'manifests'}",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[dict[str, Any]]]]:
    """One capture of the shop with the rules; its items, as the crawl wrote them."""
    root = tmp_path_factory.mktemp("shop")
    (root / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    for server in serve():
        server.site(product_site.PAGES)
        run = scrapy(
            "crawl", "traverse", *crawl_args(root, server.origin), *settings(root),
            "-a", f"url={server.url('/')}", "-a", "source_id=site",
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        (path,) = (root / "items").glob("*.jsonl")
        yield root, [json.loads(line) for line in path.read_bytes().splitlines()]


def verify(root: Path, lines: list[str | bytes], *more: str, timeout: float = 60) -> Any:
    path = root / f"check-{time.monotonic_ns()}.jsonl"
    path.write_bytes(
        b"".join((line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines)
    )
    return scrapy("extract", *settings(root), *more, "--verify", str(path), timeout=timeout)


def by_line(stdout: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        if ": line " in line:
            number = int(line.split(": line ", 1)[1].split(" ", 1)[0].rstrip(":,"))
            found.setdefault(number, []).append(line)
    return found


def card(items: list[dict[str, Any]]) -> dict[str, Any]:
    return copy.deepcopy(next(i for i in items if i["type"] == "card"))


def test_forged_values_are_mismatches_whatever_the_entry_claims(shop):
    root, items = shop
    honest = card(items)
    no_node = card(items)  # the node and span deleted, any text written
    entry = no_node["evidence"]["title"][0]
    del entry["node"], entry["span"]
    entry["text"] = no_node["fields"]["title"] = "Forged Title"
    price = card(items)
    price_entry = price["evidence"]["price"][0]
    del price_entry["node"]
    price_entry.pop("span", None)
    price_entry["text"], price["fields"]["price"] = "1.0", 1.0
    selector = card(items)  # the entry's own selector computes the value
    forged = {"selector": "xpath:string('Forged')", "text": "Forged"}
    selector["evidence"]["title"] = [forged]
    selector["fields"]["title"] = "Forged"
    pattern = card(items)  # the entry's own re picks another value from the true text
    pattern["evidence"]["price"][0]["re"] = r"([0-9])"
    pattern["fields"]["price"] = 1.0
    lines = [json.dumps(i) for i in (honest, no_node, price, selector, pattern)]
    run = verify(root, lines)
    assert run.returncode == 1, run.stdout + run.stderr
    found = by_line(run.stdout)
    assert sorted(found) == [2, 3, 4, 5], run.stdout
    assert any("field 'title'" in x and "'Forged Title'" in x for x in found[2]), found[2]
    assert any("field 'price'" in x and "1.0" in x for x in found[3]), found[3]
    assert any("field 'title'" in x and "'Forged'" in x for x in found[4]), found[4]
    assert any("field 'price'" in x and "1299.0" in x for x in found[5]), found[5]
    assert "in 5 item(s)" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_source_ref_that_leaves_the_store_names_no_snapshot(shop, tmp_path):
    # A snapshot file outside TRAVERSE_STORE, and items that its bytes honestly give,
    # under a sourceRef whose fetchedAt climbs out of the page's directory to it.
    root, _items = shop
    url = "http://shop.test/shop/list.html"
    fetched = "../../outside/2026-01-01T00:00:00.000Z"
    snapshot = model.build_snapshot(
        source_id=f"site::{url}", url=url, status=200, content_type="html",
        raw_body=product_site.LISTING.replace("Lamp", "Forged").encode(),
        content_type_header="text/html; charset=utf-8", fetched_at=fetched,
    )  # fmt: skip
    name = f"{fetched.replace(':', '-')}-{snapshot['bodyHash'][:12]}.json"
    store = FilesystemSnapshotStore(str(root / "store"))
    outside = Path(store.root) / store.directory(snapshot["sourceId"]) / name
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_bytes(encode(snapshot))
    assert not outside.resolve().is_relative_to(Path(store.root).resolve())
    ref = build_source_ref(snapshot)
    extraction = Extractor(str(root / "extract.toml")).extract(
        snapshot["body"], url, page_id=snapshot["sourceId"], source_ref=ref
    )
    assert extraction.items and extraction.items[0]["fields"]["title"] == "Forged"
    run = verify(root, [json.dumps(item) for item in extraction.items])
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == len(extraction.items)
    assert all("its snapshot is not in the store" in line for line in lines), run.stdout


def test_hostile_entries_are_bounded_in_count_time_and_output(shop):
    root, items = shop
    many = card(items)  # 200,000 copies of the one true entry of a field without `many`
    many["evidence"]["title"] = many["evidence"]["title"] * 200_000
    backtracking = card(items)  # a regular expression built to backtrack, in the entry
    backtracking["evidence"]["title"][0].update(re="(a+)+$", text="a" * 40 + "!")
    huge = card(items)  # one value of 10 million characters
    huge["fields"]["title"] = "x" * 10_000_000
    started = time.monotonic()
    run = verify(root, [json.dumps(i) for i in (many, backtracking, huge)], timeout=90)
    assert time.monotonic() - started < 60
    assert run.returncode == 1, run.stderr
    found = by_line(run.stdout)
    assert any("200,000 evidence entry(ies) where the rules give 1" in x for x in found[1])
    assert any("field 'title'" in x for x in found[2]), found[2]
    assert any("(10,000,000 characters)" in x for x in found[3]), found[3]
    assert max(len(line) for line in run.stdout.splitlines()) <= LINE
    assert len(run.stdout) < 20_000


def test_lines_that_are_not_items_are_mismatches_and_the_rest_is_verified(shop):
    root, items = shop
    honest = json.dumps(next(i for i in items if i["type"] == "product"))
    nul = card(items)
    nul["evidence"]["title"][0]["node"] = "/html/body\x00/div"
    lines: list[str | bytes] = [
        "[" * 100_000 + "]" * 100_000,  # nested far past any parser's recursion
        json.dumps(nul),
        b'{"type": "card", "fields": {}, "\xff": 1}',  # not UTF-8
        '{"type": "card", "fields": {}',  # cut short
        '"a string"',
        '{"type": "card"}',
        '{"type": 1, "url": [], "fields": {"x": NaN}}',
        honest,
    ]
    run = verify(root, lines)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1, run.stderr
    found = by_line(run.stdout)
    assert sorted(found) == [1, 2, 3, 4, 5, 6, 7], run.stdout
    assert "nested too deeply" in found[1][0]
    assert "field 'title'" in found[2][0] and "the node '/html/body\\x00/div'" in found[2][0]
    assert "7 mismatch(es) in 8 item(s)" in run.stderr


def test_items_of_other_rules_or_with_no_rules_never_pass(shop, tmp_path):
    root, items = shop
    other = tmp_path / "other.toml"
    other.write_text(product_site.RULES + "\n# a comment: other bytes\n", encoding="utf-8")
    run = verify(root, [json.dumps(items[0])], "-s", f"TRAVERSE_EXTRACT={other}")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "made by the extractor 'sha256:" in run.stdout
    assert "verify it with the extraction file that made it" in run.stdout
    run = verify(root, [json.dumps(items[0])], "-s", "TRAVERSE_EXTRACT=")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr.startswith("error: TRAVERSE_EXTRACT: not set: --verify extracts")
    assert run.stdout == ""


def test_a_body_changed_since_the_capture_verifies_nothing(shop, tmp_path):
    root, items = shop
    item = card(items)
    snapshot = FilesystemSnapshotStore(str(root / "store")).get_by_source_ref(item["sourceRef"])
    assert snapshot is not None
    store = FilesystemSnapshotStore(str(root / "store"))
    path = Path(store.path(snapshot))
    original = path.read_bytes()
    try:
        changed = {**snapshot, "body": snapshot["body"].replace("$15", "$16")}
        path.write_bytes(encode(changed))  # type: ignore[arg-type]
        run = verify(root, [json.dumps(item)])
    finally:
        path.write_bytes(original)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "its snapshot's body does not match its bodyHash" in run.stdout
