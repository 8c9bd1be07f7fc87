"""The store's read path: the same answers, read with less work."""

from __future__ import annotations

import json
import os

from traverse_crawl.snapshots.store import FilesystemSnapshotStore, check_snapshot_text, serialize

SNAPSHOT = {
    "sourceId": "s::http://a.test/",
    "url": "http://a.test/",
    "fetchedAt": "2026-11-30T12:00:00.000Z",
    "status": 200,
    "contentType": "html",
    "body": "<p>caf\u00e9 \U0001f600</p>",
    "bodyHash": "ab" * 32,
}


def test_a_bom_is_damage_with_json_loads_own_message():
    text = "\ufeff" + serialize(SNAPSHOT)
    try:
        json.loads(text)
    except ValueError as exc:
        expected = f"not valid JSON ({exc})"
    assert check_snapshot_text(text) == expected


def test_the_decoder_keeps_rejecting_nan_and_huge_numbers():
    assert check_snapshot_text('{"status": NaN}').startswith("not valid JSON (JSON.parse rejects")
    assert "out of range" in str(check_snapshot_text('{"status": 1e400}'))


def test_latest_reads_the_file_and_skips_a_directory_named_like_one(tmp_path):
    store = FilesystemSnapshotStore(str(tmp_path))
    path = store.put(SNAPSHOT)
    os.mkdir(os.path.join(os.path.dirname(path), "0000-a-directory.json"))
    damaged: list[str] = []
    assert store.latest(SNAPSHOT["sourceId"], damaged) == SNAPSHOT
    assert damaged == []
