"""Pure tests of the items diff: matching, classes, field changes, renderings, bounds."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from traverse_crawl.reports import items_diff, items_file
from traverse_crawl.reports.items_diff import MISSING, NOT_EXTRACTED

U = "https://shop.test/"


def item(url: str, missing: tuple[str, ...] = (), type_: str = "card", **fields: Any) -> dict:
    return {
        "type": type_,
        "pageId": f"shop::{url}",
        "url": url,
        "sourceRef": f"traverse-snapshot:shop:{abs(hash(url)) % 97}",
        "fields": fields,
        "missing": list(missing),
        "extractor": "sha256:" + "0" * 64,
        "evidence": {
            name: [{"selector": "css:x", "xpath": "/html/body", "text": "t"}] for name in fields
        },
    }


def write(path: Path, *items: dict | str) -> str:
    path.write_text(
        "".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items),
        encoding="utf-8",
    )
    return str(path)


def compare(tmp_path: Path, old: list, new: list, warnings: list[str] | None = None):
    a, b = write(tmp_path / "old.jsonl", *old), write(tmp_path / "new.jsonl", *new)
    return items_diff.compare([a], [b], (warnings if warnings is not None else []).append)


def keys(refs, files: list[str]) -> list[tuple[str, str, int]]:
    reader = items_file.ItemReader(files)
    out = []
    for ref in refs:
        got = reader.read_at(ref.file, ref.offset)
        out.append((got["type"], got["url"], ref.index))
    reader.close()
    return out


def test_items_are_matched_by_type_url_and_order_on_the_page(tmp_path):
    old = [
        item(U, title="A"),
        item(U, title="B"),
        item(U, type_="offer", title="B"),
        item(U + "gone", title="G"),
    ]
    new = [
        item(U, title="A"),
        item(U, title="B2"),  # the second card of U: changed
        item(U, title="C"),  # a third card: added
        item(U, type_="offer", title="B"),  # another type on the same page: its own order
    ]
    got = compare(tmp_path, old, new)
    assert got.counts() == {"added": 1, "removed": 1, "changed": 1, "unchanged": 2}
    assert keys(got.added, got.new_files) == [("card", U, 2)]
    assert keys(got.removed, got.old_files) == [("card", U + "gone", 0)]
    assert keys([new for _, new in got.changed], got.new_files) == [("card", U, 1)]
    assert got.differs()


def test_a_card_inserted_first_shifts_the_order_so_every_later_card_changes(tmp_path):
    # Matching is by order on the page, not by content: documented in docs/reports.md.
    got = compare(
        tmp_path, [item(U, t="A"), item(U, t="B")], [item(U, t="Z"), item(U, t="A"), item(U, t="B")]
    )
    assert got.counts() == {"added": 1, "removed": 0, "changed": 2, "unchanged": 0}


def test_only_fields_are_compared_not_source_ref_evidence_or_extractor(tmp_path):
    before = item(U, title="A", price=1.5)
    after = dict(before, sourceRef="traverse-snapshot:other", extractor="sha256:" + "1" * 64)
    after["evidence"] = {}
    after["fields"] = {"price": 1.5, "title": "A"}  # another key order: the same value
    got = compare(tmp_path, [before], [after])
    assert got.counts() == {"added": 0, "removed": 0, "changed": 0, "unchanged": 1}
    assert not got.differs()


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (item(U, price=1), item(U, price=2), [("price", 1, 2)]),
        (item(U, price=1), item(U, price=1.0), [("price", 1, 1.0)]),  # integer -> number
        (item(U, tags=["a", "b"]), item(U, tags=["b", "a"]), [("tags", ["a", "b"], ["b", "a"])]),
        (item(U, price=1), item(U, ("price",)), [("price", 1, MISSING)]),
        (item(U, ("price",)), item(U, price=1), [("price", MISSING, 1)]),
        (item(U, price=1), item(U, colour="red", price=1), [("colour", NOT_EXTRACTED, "red")]),
        (item(U, ("colour",), price=1), item(U, price=1), [("colour", MISSING, NOT_EXTRACTED)]),
        (item(U, a=True), item(U, a=1), [("a", True, 1)]),
    ],
)
def test_field_changes(old, new, expected):
    got = [(c.field, c.old, c.new) for c in items_diff.field_changes(old, new)]
    assert got == expected


def test_text_lists_each_class_with_field_values(tmp_path):
    old = [item(U, title="A", price=3), item(U + "gone", ("price",), title="G")]
    new = [item(U, ("tags",), title="A", price=4), item(U + "new", title="N\x1b[2J", price=1)]
    got = compare(tmp_path, old, new)
    assert "".join(items_diff.to_text(got)) == (
        "1 added, 1 removed, 1 changed, 0 unchanged\n"
        "added (1):\n"
        f"  card[0] {U}new\n"
        '      title: "N\\u001b[2J"\n'  # a terminal escape from a page is shown, not sent
        "      price: 1\n"
        "removed (1):\n"
        f"  card[0] {U}gone\n"
        '      title: "G"\n'
        "      price: (missing)\n"
        "changed (1):\n"
        f"  card[0] {U}\n"
        "      price: 3 → 4\n"
        "      tags: (not extracted) → (missing)\n"
    )


def test_json_has_counts_and_every_item_that_differs_with_both_sides(tmp_path):
    old = [item(U, title="A", price=3), item(U + "gone", title="G"), item(U + "same", t=1)]
    new = [item(U, ("price",), title="A"), item(U + "new", title="N"), item(U + "same", t=1)]
    got = json.loads("".join(items_diff.to_json(compare(tmp_path, old, new))))
    assert got["counts"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 1}
    assert got["differs"] is True
    by_class = {entry["class"]: entry for entry in got["items"]}
    assert len(got["items"]) == 3
    assert by_class["added"]["old"] is None
    assert by_class["added"]["new"]["fields"] == {"title": "N"}
    assert by_class["removed"]["new"] is None
    assert by_class["removed"]["old"]["sourceRef"] == old[1]["sourceRef"]
    changed = by_class["changed"]
    assert (changed["type"], changed["url"], changed["index"]) == ("card", U, 0)
    assert changed["changes"] == [{"field": "price", "old": 3}]  # no "new": it is missing
    assert changed["new"]["missing"] == ["price"]
    assert "evidence" not in changed["new"]


def test_several_files_prefix_each_item_with_its_file_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    write(tmp_path / "a" / "shop.jsonl", item(U, t=1))
    write(tmp_path / "a" / "blog.jsonl", item(U + "post", type_="post", t=1))
    write(tmp_path / "b" / "shop.jsonl", item(U, t=2))
    write(tmp_path / "b" / "shop.skipped.jsonl", '{"url": "x", "reason": "off-origin"}')
    old = items_file.items_files([str(tmp_path / "a")])
    new = items_file.items_files([str(tmp_path / "b")])
    assert [Path(p).name for p in old] == ["blog.jsonl", "shop.jsonl"]
    assert [Path(p).name for p in new] == ["shop.jsonl"]  # not a manifest's skipped file
    text = "".join(items_diff.to_text(items_diff.compare(old, new, None)))
    assert f"  [blog] post[0] {U}post\n" in text
    assert f"  [shop] card[0] {U}\n      t: 1 → 2\n" in text


def test_lines_that_are_not_items_are_warned_once_each_and_bounded(tmp_path):
    bad = ["not json", "[1]", '{"type": "card", "url": "u"}', "\xff", ""]
    warnings: list[str] = []
    got = compare(tmp_path, [item(U, t=1), *bad], [item(U, t=1)], warnings)
    assert got.counts()["unchanged"] == 1
    old = tmp_path / "old.jsonl"
    assert warnings == [
        f"{old}:2: not an item: not JSON (Expecting value: line 1 column 1 (char 0)); line skipped",
        f"{old}:3: not an item: not a JSON object; line skipped",
        f"{old}:4: not an item: no fields object; line skipped",
        f"{old}:5: not an item: not JSON (Expecting value: line 1 column 1 (char 0)); line skipped",
    ]  # the blank line is not a warning
    (tmp_path / "bad.jsonl").write_bytes(b"\xff\xfe\n" + b"x\n" * 50)
    warnings.clear()
    list(items_file.read_items(str(tmp_path / "bad.jsonl"), warnings.append))
    assert len(warnings) == items_file.MAX_WARNINGS + 1
    assert warnings[0].endswith(":1: not an item: not UTF-8; line skipped")
    assert warnings[-1] == f"{tmp_path / 'bad.jsonl'}: 41 more line(s) that are not items skipped"


def test_an_over_long_line_is_skipped_without_being_held(tmp_path, monkeypatch):
    monkeypatch.setattr(items_file, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(items_file, "CHUNK", 100)
    huge = item(U, title="x" * 5000)
    warnings: list[str] = []
    got = compare(tmp_path, [item(U, t=1)], [huge, item(U + "b", t=2)], warnings)
    assert warnings == [
        f"{tmp_path / 'new.jsonl'}:1: not an item: longer than 1000 bytes; line skipped"
    ]
    # The next line is read from its own start: the skipped one did not swallow it.
    assert keys(got.added, got.new_files) == [("card", U + "b", 0)]


def test_values_in_the_text_are_cut_and_fields_bounded(tmp_path):
    many = {f"f{i:03d}": "v" * 500 for i in range(items_diff.MAX_FIELDS + 5)}
    got = compare(tmp_path, [], [item(U, **many)])
    lines = "".join(items_diff.to_text(got)).splitlines()
    assert lines[3] == '      f000: "' + "v" * (items_diff.MAX_VALUE - 1) + "…"
    assert lines[-1] == "      … 5 more field(s)"
    assert len(lines) == 3 + items_diff.MAX_FIELDS + 1


def test_memory_holds_no_field_values_of_unchanged_items(tmp_path):
    # 2,000 items of 10 KB each side, all unchanged: 20 MB per file. The index and the
    # streamed NEW side need a small fraction of that at any time.
    rows = [item(f"{U}p{i}", body="w" * 10_000) for i in range(2_000)]
    a, b = write(tmp_path / "old.jsonl", *rows), write(tmp_path / "new.jsonl", *rows)
    tracemalloc.start()
    got = items_diff.compare([a], [b], None)
    text = "".join(items_diff.to_text(got))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert text == "0 added, 0 removed, 0 changed, 2000 unchanged\n"
    assert Path(a).stat().st_size > 20_000_000
    assert peak < 2_000_000, peak


def test_an_item_file_changed_between_passes_is_a_warning_not_a_crash(tmp_path):
    got = compare(tmp_path, [], [item(U, t=1)])
    (tmp_path / "new.jsonl").write_text("", encoding="utf-8")
    warnings: list[str] = []
    text = "".join(items_diff.to_text(got, warnings.append))
    assert text == "1 added, 0 removed, 0 changed, 0 unchanged\nadded (1):\n"
    assert warnings == [
        f"{tmp_path / 'new.jsonl'}: changed while being compared; the item at byte 0 is not shown"
    ]


def test_unreadable_inputs_are_items_errors_naming_the_file(tmp_path):
    with pytest.raises(items_file.ItemsError, match=r"nope\.jsonl: cannot read: No such file"):
        items_file.items_files([str(tmp_path / "nope.jsonl")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(items_file.ItemsError, match=r"empty: directory holds no items file"):
        items_file.items_files([str(tmp_path / "empty")])


def nested(depth: int) -> str:
    return '{"type": "c", "url": "u", "fields": {"a": ' + "[" * depth + "]" * depth + "}}"


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"type": 1, "url": "u", "fields": {}}', "no type"),
        ('{"type": "c", "url": "u", "fields": [], "missing": []}', "no fields object"),
        (
            '{"type": "c", "url": "u", "fields": {}, "missing": [1]}',
            "missing is not a list of strings",
        ),
        (nested(200), "fields nested deeper than 100 levels"),
        (nested(200_000), "nested too deeply to read"),  # past the JSON decoder's own limit
    ],
)
def test_what_is_not_an_item(line, reason):
    assert items_file.parse_line(line.encode()) == reason


def test_a_value_nested_as_deep_as_allowed_is_compared_and_printed(tmp_path):
    deep = json.loads(nested(99))
    other = json.loads(nested(98))
    got = compare(tmp_path, [other], [deep])
    assert got.counts()["changed"] == 1
    assert "".join(items_diff.to_text(got)).count("→") == 1
    assert json.loads("".join(items_diff.to_json(got)))["counts"]["changed"] == 1


def test_removed_items_are_listed_in_olds_file_and_line_order(tmp_path):
    a = write(tmp_path / "a.jsonl", item(U + "3", t=1), item(U + "1", t=1), item(U + "2", t=1))
    b = write(tmp_path / "b.jsonl", item(U + "0", t=1), item(U + "1", t=1))
    new = write(tmp_path / "new.jsonl", item(U + "1", t=1))
    got = items_diff.compare([a, b], [new], None)
    assert [(k[1], k[2]) for k in keys(got.removed, got.old_files)] == [
        (U + "3", 0), (U + "2", 0), (U + "0", 0), (U + "1", 1),  # U1's second item: in b
    ]  # fmt: skip
