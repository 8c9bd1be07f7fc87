"""The filesystem snapshot store, as pure tables (docs/snapshots.md, "The store").

Expected values that are not Traverse's own examples were produced by running
Traverse's ``snapshot-store.ts`` functions (commit 03aeb1d) under Node 20.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.store import (
    FilesystemSnapshotStore,
    deserialize,
    encode,
    file_name,
    serialize,
    sort_newest_first,
    source_dir_name,
)
from traverse_crawl.utils.javascript import decode_base64

HELLO_HASH = "e2c6c0ea7c7900c31f953e48d30d5e839801ab90630d751e7c8426ed5859da47"


@pytest.mark.parametrize(
    ("source_id", "expected"),
    [
        # Traverse's own examples of the directory naming
        ("src-1", "src-1-cb51f000"),
        ("", "source-e3b0c442"),
        ("::", "source-71546855"),
        ("a b/c", "a-b-c-539138d5"),
        (
            "crawl-1::https://example.test/crawl-site/home.html",
            "crawl-1-https-example.test-crawl-site-home.html-bf870f68",
        ),
        # from Traverse's sourceDirName under Node
        ("---a---", "a-0a643c93"),
        ("café/ü", "caf-918664c8"),
        ("x\U0001f600y", "x-y-d506f8eb"),
        ("x\ud83d\ude00y", "x-y-d506f8eb"),  # the same id as JavaScript sees it
        ("\ud800x", "x-a87ce467"),  # a lone surrogate is hashed as U+FFFD
        ("a" * 100, "a" * 80 + "-28165978"),
        ("a" * 79 + "/b", "a" * 79 + "--5edb7186"),  # trimmed before the cut
        ("-" * 5 + "b" * 90, "b" * 80 + "-f3e143a8"),
        (
            "crawl-1::http://127.0.0.1:8000/a?b=c&d=e#f",
            "crawl-1-http-127.0.0.1-8000-a-b-c-d-e-f-92384f9c",
        ),
        ("50%", "50-28fdae8d"),
        ("a%3A%3Ab::c", "a-3A-3Ab-c-c1eee9d7"),
        (".", ".-cdb4ee2a"),
        ("..", "..-5ec1f7e7"),
    ],
)
def test_source_dir_name(source_id: str, expected: str) -> None:
    assert source_dir_name(source_id) == expected


def test_file_name_is_spec_example() -> None:
    snap = {"fetchedAt": "2026-07-02T00:00:00.000Z", "bodyHash": HELLO_HASH}
    assert file_name(snap) == "2026-07-02T00-00-00.000Z-e2c6c0ea7c79.json"


def test_serialize_is_json_stringify_byte_for_byte() -> None:
    # JSON.stringify(snapshot, null, 2) under Node: non-ASCII raw, U+2028 raw,
    # control characters and a lone surrogate escaped, no final newline.
    snap = {
        "sourceId": "s\ud800::é",
        "url": "http://h/",
        "fetchedAt": "2026-07-02T00:00:00.000Z",
        "status": 200,
        "contentType": "html",
        "body": '<p>café \u2028 \u0001 "q" \\ /</p>\n\U0001f600',
        "bodyHash": "abc",
        "etag": 'W/"x"',
    }
    assert serialize(snap) == (
        '{\n  "sourceId": "s\\ud800::é",\n  "url": "http://h/",\n'
        '  "fetchedAt": "2026-07-02T00:00:00.000Z",\n  "status": 200,\n'
        '  "contentType": "html",\n'
        '  "body": "<p>café \u2028 \\u0001 \\"q\\" \\\\ /</p>\\n\U0001f600",\n'
        '  "bodyHash": "abc",\n  "etag": "W/\\"x\\""\n}'
    )
    # The bytes a capture writes are the same text, found without a scan for
    # surrogates (only an encoding that fails can hold one).
    assert encode(snap) == serialize(snap).encode("utf-8")
    plain = dict(snap, sourceId="s::é")
    assert encode(plain) == serialize(plain).encode("utf-8")


def test_serialize_binary_body_is_base64_last_key() -> None:
    snap = {
        "sourceId": "p",
        "url": "http://h/a.png",
        "fetchedAt": "2026-07-02T00:00:00.000Z",
        "status": 200,
        "contentType": "png",
        "body": "",
        "bodyHash": "ff",
        "bodyBytes": bytes([0, 1, 2, 253, 254, 255]),
        "redirects": ["http://h/x"],
    }
    text = serialize(snap)
    assert text == (
        '{\n  "sourceId": "p",\n  "url": "http://h/a.png",\n'
        '  "fetchedAt": "2026-07-02T00:00:00.000Z",\n  "status": 200,\n'
        '  "contentType": "png",\n  "body": "",\n  "bodyHash": "ff",\n'
        '  "redirects": [\n    "http://h/x"\n  ],\n  "bodyBytesBase64": "AAEC/f7/"\n}'
    )
    assert deserialize(text) == snap
    assert list(deserialize(text) or {})[-1] == "bodyBytes"


def _valid(**changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "sourceId": "s",
        "url": "http://h/",
        "fetchedAt": "2026-07-02T00:00:00.000Z",
        "status": 200,
        "contentType": "html",
        "body": "<h1>Hello</h1>",
        "bodyHash": HELLO_HASH,
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not _DROP}


_DROP = object()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        "[]",
        "null",
        '"snapshot"',
        json.dumps(_valid(status="200")),
        json.dumps(_valid(status=True)),
        json.dumps(_valid(status=None)),
        json.dumps(_valid(body=None)),
        json.dumps(_valid(bodyHash=_DROP)),
        json.dumps(_valid(url=1)),
        json.dumps(_valid(bodyBytes=[1, 2])),  # a JSON value is never bytes
        json.dumps(_valid()).replace("200", "NaN"),  # JSON.parse rejects NaN
        "\ufeff" + json.dumps(_valid()),  # and a BOM
    ],
)
def test_foreign_text_is_not_a_snapshot(text: str) -> None:
    assert deserialize(text) is None


def test_deserialize_accepts_what_traverse_accepts() -> None:
    assert deserialize(json.dumps(_valid(status=200.0)))["status"] == 200  # type: ignore[index]
    extra = deserialize(json.dumps(_valid(extra={"k": 1}, bodyBytesBase64=7)))
    assert extra is not None and extra["extra"] == {"k": 1} and extra["bodyBytesBase64"] == 7
    assert "bodyBytes" not in extra


@pytest.mark.parametrize(
    ("encoded", "raw"),
    [
        # Node 20's Buffer.from(s, "base64"), which Traverse uses
        ("YWJj", b"abc"),
        ("YW Jj", b"abc"),
        ("YW*Jj", b"abc"),
        ("YWJ", b"ab"),
        ("YWJj=", b"abc"),
        ("YW_-", bytes.fromhex("616ffe")),
        ("YWJj====x", b"abc"),
        ("YQ==YQ==", b"a"),
        ("", b""),
        ("Y", b""),
    ],
)
def test_base64_is_decoded_like_node(encoded: str, raw: bytes) -> None:
    assert decode_base64(encoded) == raw


def _snap(fetched_at: str, body: str, source_id: str = "page") -> dict[str, object]:
    return build_snapshot(
        source_id=source_id,
        url="http://h/p",
        status=200,
        content_type="text",
        raw_body=body.encode(),
        content_type_header="text/plain",
        fetched_at=fetched_at,
    )


def test_put_writes_traverse_layout(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    snap = build_snapshot(
        source_id="src-1",
        url="http://h/",
        status=200,
        content_type="html",
        raw_body=b"<h1>Hello</h1>",
        content_type_header="text/html",
        fetched_at="2026-07-02T00:00:00.000Z",
    )
    path = store.put(snap)
    assert path == str(tmp_path / "src-1-cb51f000" / "2026-07-02T00-00-00.000Z-e2c6c0ea7c79.json")
    assert Path(path).read_text(encoding="utf-8") == json.dumps(snap, indent=2, ensure_ascii=False)
    assert os.listdir(tmp_path / "src-1-cb51f000") == [os.path.basename(path)]  # no temp file
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask  # as Node's writeFile


def test_order_is_traverse_locale_compare(tmp_path: Path) -> None:
    # Traverse sorts with localeCompare (ICU), not by code point: "B1" sorts
    # after "a1", "_" before "-" before "T". Expected order from Node.
    pairs = [
        ("2026-07-02T00:00:00.000Z", "a1"),
        ("2026-07-02T00:00:00.000Z", "B1"),
        ("2026-07-02T00:00:00.000Z", "b0"),
        ("2026-07-01T23:59:59.999Z", "ff"),
        ("2026-07-02T00:00:01.000Z", "00"),
        ("2026-07-02T00:00:00Z", "cc"),
        ("2026-07-02_00", "dd"),
        ("2026-07-02-00", "ee"),
        ("2026-07-02T00:00:00.000z", "11"),
    ]
    ordered = sort_newest_first([{"fetchedAt": f, "bodyHash": h} for f, h in pairs])
    assert [(s["fetchedAt"], s["bodyHash"]) for s in ordered] == [
        ("2026-07-02T00:00:01.000Z", "00"),
        ("2026-07-02T00:00:00Z", "cc"),
        ("2026-07-02T00:00:00.000Z", "B1"),
        ("2026-07-02T00:00:00.000Z", "b0"),
        ("2026-07-02T00:00:00.000Z", "a1"),
        ("2026-07-02T00:00:00.000z", "11"),
        ("2026-07-02-00", "ee"),
        ("2026-07-02_00", "dd"),
        ("2026-07-01T23:59:59.999Z", "ff"),
    ]
    store = FilesystemSnapshotStore(str(tmp_path))
    for fetched_at, body in [
        ("2026-07-01T00:00:00.000Z", "old"),
        ("2026-07-03T00:00:00.000Z", "new"),
    ]:
        store.put(_snap(fetched_at, body))
    store.put(_snap("2026-07-02T00:00:00.000Z", "mid"))
    assert [s["body"] for s in store.list("page")] == ["new", "mid", "old"]
    assert store.latest("page")["body"] == "new"  # type: ignore[index]
    assert store.list("other") == [] and store.latest("other") is None


def test_get_by_hash_or_any_prefix_newest_first(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    first = _snap("2026-07-01T00:00:00.000Z", "same")
    again = _snap("2026-07-02T00:00:00.000Z", "same")
    other = _snap("2026-07-03T00:00:00.000Z", "other")
    for snap in (first, again, other):
        store.put(snap)
    digest = str(first["bodyHash"])
    assert store.get("page", digest) == again  # newest with that hash, no ambiguity check
    assert store.get("page", digest[:3]) == again
    assert store.get("page", "") == other  # an empty prefix: the newest, as Traverse does
    assert store.get("page", "zz") is None
    assert store.find("page", digest, "2026-07-01T00:00:00.000Z") == first
    assert store.find("page", digest, "2026-07-09T00:00:00.000Z") is None


def test_unreadable_and_foreign_files_are_skipped(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    good = _snap("2026-07-01T00:00:00.000Z", "good")
    path = Path(store.put(good))
    directory = path.parent
    (directory / "zz-notes.txt").write_text(json.dumps(_valid(fetchedAt="2099")))
    (directory / "zz-partial.json").write_text(serialize(good)[:40])
    (directory / "zz-foreign.json").write_text('{"hello": "world"}')
    (directory / "zz-dir.json").mkdir()
    (directory / ".zz.json.abc.tmp").write_text(serialize(_snap("2099-01-01T00:00:00.000Z", "t")))
    assert store.list("page") == [good]
    # Node reads files as UTF-8 with U+FFFD: a stray byte does not hide a snapshot.
    latin = json.dumps(
        _valid(fetchedAt="2099-01-01T00:00:00.000Z", body="caf\u00e9"), ensure_ascii=False
    )
    (directory / "zz-latin1.json").write_bytes(latin.encode("latin-1"))
    assert store.latest("page")["body"] == "caf\ufffd"  # type: ignore[index]


def test_unlistable_directory_reads_as_empty(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    Path(store.directory("page")).write_text("a file where the directory should be")
    assert store.list("page") == []
    with pytest.raises(OSError):
        store.put(_snap("2026-07-01T00:00:00.000Z", "x"))
    assert os.listdir(tmp_path) == [source_dir_name("page")]


def test_same_name_overwrites_atomically(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    snap = _snap("2026-07-01T00:00:00.000Z", "body")
    store.put(snap)
    flagged = {**snap, "fromCache": True, "notModified": True}
    path = store.put(flagged)  # a 304's re-put overwrites the same file
    assert os.listdir(os.path.dirname(path)) == [os.path.basename(path)]
    assert store.list("page") == [flagged]


def test_put_refuses_a_name_outside_its_directory(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    with pytest.raises(ValueError):
        store.put(_snap("../../escape", "x"))
    assert not (tmp_path / "escape").exists()


def test_binary_round_trip_through_files(tmp_path: Path) -> None:
    raw = bytes(range(256)) * 3
    snap = build_snapshot(
        source_id="bin",
        url="http://h/x.pdf",
        status=200,
        content_type="pdf",
        raw_body=raw,
        content_type_header="application/pdf",
        fetched_at="2026-07-02T00:00:00.000Z",
    )
    store = FilesystemSnapshotStore(str(tmp_path))
    path = store.put(snap)
    on_disk = json.loads(Path(path).read_text())
    assert base64.b64decode(on_disk["bodyBytesBase64"]) == raw and "bodyBytes" not in on_disk
    assert store.latest("bin")["bodyBytes"] == raw  # type: ignore[index]


@pytest.mark.parametrize(
    "seed_id",
    ["s", "a b", "---", "", "x" * 120, "crawl::1", "caf\u00e9/\U0001f600", "50%"],
)
def test_walk_by_seed_prefix_finds_every_page_of_the_seed(tmp_path: Path, seed_id: str) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    urls = ["http://h/", "http://h/a?b=c", "https://other.test:8443/x"]
    for url in urls:
        store.put(_snap("2026-07-01T00:00:00.000Z", url, source_id=page_id(seed_id, url)))
    store.put(_snap("2026-07-01T00:00:00.000Z", "other seed", source_id=page_id("zz", "http://h/")))
    prefix = page_id(seed_id, "")
    found = [s for s in store.walk(seed_id_prefix=prefix) if s["sourceId"].startswith(prefix)]
    assert sorted(s["body"] for s in found) == sorted(urls)


def test_streamed_json_write_is_byte_identical_to_dumps(tmp_path):
    from traverse_crawl.utils.atomic import atomic_write_json

    obj = {"seed": {"id": "café ☕", "url": "https://h/"}, "pages": [{"a": None, "b": [1.5, True]}]}
    path = tmp_path / "m.json"
    atomic_write_json(str(path), obj)
    assert path.read_bytes() == json.dumps(obj, indent=2, ensure_ascii=False).encode("utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_latest_get_and_find_agree_with_the_newest_first_order(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    stamps = ["2026-07-02T00:00:00.000Z", "2026-07-02T00:00:00Z", "2026-07-02-00", "2026-07-01"]
    for n, fetched_at in enumerate(stamps):
        store.put(_snap(fetched_at, f"body {n}"))
        store.put(_snap(fetched_at, "same"))
    listed = store.list("page")
    assert store.latest("page") == listed[0]
    same = [s for s in listed if s["body"] == "same"]
    assert store.get("page", str(same[0]["bodyHash"])[:8]) == same[0]
    oldest = listed[-1]
    assert store.find("page", str(oldest["bodyHash"]), str(oldest["fetchedAt"])) == oldest


def test_the_latest_of_many_versions_holds_one_version_at_a_time(tmp_path: Path) -> None:
    """A page captured 200 times, 100 KB each: reading its newest keeps one or two
    versions in memory, not all of them (20 MB)."""

    store = FilesystemSnapshotStore(str(tmp_path))
    for n in range(200):
        stamp = f"2026-07-01T00:00:{n // 60:02d}.{n % 60:03d}Z"
        store.put(_snap(stamp, f"{n:03d}" + "x" * 100_000))
    tracemalloc.start()
    try:
        newest = store.latest("page")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert newest is not None and newest["body"].startswith("199")
    assert peak < 2_000_000, f"{peak} bytes at peak"
