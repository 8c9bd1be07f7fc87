"""``scrapy diff --items`` on items files in the documented format (docs/reports.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import REPO, scrapy, scrapy_env

SITE = "http://127.0.0.1:8000"
EXTRACTOR = "sha256:" + "ab" * 32


def card(path: str, fetched: str, title: str, price: float | None, tags: list[str]) -> dict:
    """One item as an items file holds it: every key of the format, evidence included."""
    url = SITE + path
    fields: dict[str, Any] = {"title": title, "tags": tags}
    missing = []
    if price is None:
        missing.append("price")
    else:
        fields["price"] = price
    return {
        "type": "card",
        "pageId": f"shop::{url}",
        "url": url,
        "sourceRef": f"traverse-snapshot:shop::{url}@{fetched}#sha256:{'c' * 64}",
        "fields": fields,
        "missing": missing,
        "extractor": EXTRACTOR,
        "evidence": {
            "title": [{"selector": "css:h2::text", "xpath": "/html/body/div/h2", "text": title}],
        },
    }


def write(path: Path, items: list[dict | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def crawls(tmp_path: Path) -> tuple[Path, Path]:
    """Monday's and Tuesday's items of one seed: one card added, one removed, one
    repriced and untagged, one whose price vanished, one unchanged (recaptured)."""
    monday, tuesday = "2026-11-30T08:00:00.000Z", "2026-12-01T08:00:00.000Z"
    old = [
        card("/shop/", monday, "Boots", 120.0, ["leather"]),
        card("/shop/", monday, "Hat", 20.0, ["wool", "red"]),
        card("/shop/", monday, "Scarf", 15.0, []),
        card("/shop/sale", monday, "Socks", 3.5, []),
    ]
    new = [
        card("/shop/", tuesday, "Boots", 120.0, ["leather"]),
        card("/shop/", tuesday, "Hat", 18.5, ["wool"]),
        card("/shop/", tuesday, "Scarf", None, []),
        card("/shop/new", tuesday, "Gloves", 9.0, ["wool"]),
    ]
    return (
        write(tmp_path / "old" / "shop.jsonl", old).parent,
        write(tmp_path / "new" / "shop.jsonl", new).parent,
    )


def test_text_lists_added_removed_and_changed_items_with_old_and_new_values(crawls):
    old, new = crawls
    run = scrapy("diff", "--items", str(old), str(new))
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    assert run.stdout == (
        "1 added, 1 removed, 2 changed, 1 unchanged\n"
        "added (1):\n"
        f"  card[0] {SITE}/shop/new\n"
        '      title: "Gloves"\n'
        '      tags: ["wool"]\n'
        "      price: 9.0\n"
        "removed (1):\n"
        f"  card[0] {SITE}/shop/sale\n"
        '      title: "Socks"\n'
        "      tags: []\n"
        "      price: 3.5\n"
        "changed (2):\n"
        f"  card[1] {SITE}/shop/\n"
        '      tags: ["wool", "red"] → ["wool"]\n'
        "      price: 20.0 → 18.5\n"
        f"  card[2] {SITE}/shop/\n"
        "      price: 15.0 → (missing)\n"
    )


def test_json_and_exit_code(crawls):
    old, new = crawls
    run = scrapy("diff", "--items", "--json", "--exit-code", str(old), str(new))
    assert run.returncode == 1, run.stderr
    data = json.loads(run.stdout)
    assert data["counts"] == {"added": 1, "removed": 1, "changed": 2, "unchanged": 1}
    assert data["differs"] is True
    assert [(e["class"], e["url"].removeprefix(SITE), e["index"]) for e in data["items"]] == [
        ("added", "/shop/new", 0),
        ("removed", "/shop/sale", 0),
        ("changed", "/shop/", 1),
        ("changed", "/shop/", 2),
    ]
    hat = data["items"][2]
    assert hat["changes"] == [
        {"field": "tags", "old": ["wool", "red"], "new": ["wool"]},
        {"field": "price", "old": 20.0, "new": 18.5},
    ]
    assert hat["old"]["sourceRef"].endswith("@2026-11-30T08:00:00.000Z#sha256:" + "c" * 64)
    assert data["items"][3]["changes"] == [{"field": "price", "old": 15.0}]
    assert data["items"][3]["new"]["missing"] == ["price"]

    # A directory against its own file: nothing differs, exit 0 even with --exit-code.
    same = scrapy("diff", "--items", "--exit-code", str(new), str(new / "shop.jsonl"))
    assert same.returncode == 0, same.stderr
    assert same.stdout == "0 added, 0 removed, 0 changed, 4 unchanged\n"
    quiet = scrapy("diff", "--items", "--json", str(old), str(new))  # no --exit-code
    assert quiet.returncode == 0


def test_a_line_that_is_not_an_item_is_one_warning_line(crawls):
    old, new = crawls
    with (new / "shop.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"type": "card", "url": "' + SITE + '/x"\n')  # cut short by a crash
        handle.write('{"type": "card"}\n')
    run = scrapy("diff", "--items", str(old), str(new))
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.splitlines() == [
        f"warning: {new / 'shop.jsonl'}:5: not an item: not JSON (Expecting ',' delimiter: "
        "line 1 column 50 (char 49)); line skipped",
        f"warning: {new / 'shop.jsonl'}:6: not an item: no url; line skipped",
    ]
    assert run.stdout.startswith("1 added, 1 removed, 2 changed, 1 unchanged\n")


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda p: p / "nope.jsonl", "cannot read: No such file or directory"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "directory holds no items file (*.jsonl)"),
        (lambda p: Path("/dev/null"), "not a regular file"),  # as a pipe: not read twice
    ],
)
def test_unreadable_input_exits_2_naming_it(crawls, tmp_path, make, reason):
    old, _ = crawls
    bad = make(tmp_path)
    for args in ((str(old), str(bad)), (str(bad), str(old))):
        run = scrapy("diff", "--items", *args)
        assert run.returncode == 2, run.stderr
        assert run.stdout == ""
        assert run.stderr == f"error: {bad}: {reason}\n"


def test_bodies_is_for_pages_only(crawls):
    old, new = crawls
    run = scrapy("diff", "--items", "--bodies", str(old), str(new))
    assert run.returncode == 2
    assert "--bodies compares pages: leave it out with --items" in run.stderr


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    # A diff far longer than a pipe's buffer, piped into something like ``head -1``.
    rows = [
        card(f"/p{i}", "2026-12-01T08:00:00.000Z", "x" * 100, float(i), []) for i in range(3000)
    ]
    old = write(tmp_path / "old.jsonl", [])
    new = write(tmp_path / "new.jsonl", rows)
    with subprocess.Popen(
        [sys.executable, "-m", "scrapy", "diff", "--items", str(old), str(new)],
        cwd=REPO, env=scrapy_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"3000 added, 0 removed, 0 changed, 0 unchanged\n"
        proc.stdout.close()
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 0
    assert stderr == b""
