"""A replay that cannot read or trust a snapshot says so: the page fails ``no-snapshot``
naming why, a WARNING, exit 1 — never "no snapshot stored" in silence, never a changed
body served as the capture (docs/snapshots.md, "Replay"; docs/object-storage.md).

The capture goes straight to a moto server; the replay reads through a fault proxy that
answers the chosen page's object with a 500, cuts the connection, corrupts the bytes
(their checksum fails) or never answers. ``scrapy crawl`` subprocesses throughout.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import scrapy
from tests.support.fault_proxy import FaultProxy
from tests.support.server import Server
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.file_text import serialize
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, source_dir_name

pytestmark = pytest.mark.s3


def chain_site(server: Server) -> None:
    """home → p1 → p2, one link each."""
    server.site(
        {
            "/home.html": '<a href="p1.html">next</a> <p>page 0</p>',
            "/p1.html": '<a href="p2.html">next</a> <p>page 1</p>',
            "/p2.html": "<p>page 2</p>",
        }
    )


def crawl(tmp: Path, server: Server, name: str, store: str, *more: str) -> Any:
    return scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/home.html')}", "-a", "source_id=s",
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_STORE={store}", "-s", f"TRAVERSE_MANIFEST_DIR={tmp / name}",
        "-s", f"TRAVERSE_STATS_FILE={tmp / (name + '.stats.json')}", *more, timeout=120,
    )  # fmt: skip


def manifest(tmp: Path, name: str) -> dict[str, Any]:
    (path,) = (tmp / name).glob("*.json")
    return dict(json.loads(path.read_text(encoding="utf-8")))


def stats(tmp: Path, name: str) -> dict[str, Any]:
    return dict(json.loads((tmp / f"{name}.stats.json").read_text())["stats"])


def failed_page(tmp: Path, name: str, server: Server) -> dict[str, Any]:
    """The replay's manifest: home served from the store, p1 failed (so p2 unseen)."""
    pages = manifest(tmp, name)["pages"]
    assert [p["url"] for p in pages] == [server.url("/home.html"), server.url("/p1.html")]
    assert pages[0]["fetch"]["snapshot"]["fromCache"] is True
    error = pages[1]["fetch"]["error"]
    assert error["kind"] == "no-snapshot", error
    return dict(error)


@pytest.mark.parametrize(
    ("fault", "reader", "named"),
    [
        ("error", "True", "InternalError (500): injected"),
        ("error", "False", "InternalError (500): injected"),
        ("cut", "True", "Connection was closed before we received a valid response"),
        ("corrupt", "True", "did not match calculated checksum"),
        ("blackhole", "True", "Read timeout on endpoint URL"),
    ],
)
def test_a_snapshot_the_bucket_cannot_serve_fails_its_page_and_the_replay(
    server, tmp_path, s3_server, fault, reader, named
):
    chain_site(server)
    bucket = s3_server.new_bucket()
    store = f"s3://{bucket}/st"
    captured = crawl(tmp_path, server, "capture", store, *s3_server.setting_args())
    assert captured.returncode == 0, captured.stderr[-3000:]
    server.shutdown()
    server.server_close()

    target = f"GET /{bucket}/st/{source_dir_name(page_id('s', server.url('/p1.html')))}/"
    relay = FaultProxy(
        s3_server.port,
        http=True,
        pick=lambda head: fault if head.startswith(target.encode()) else None,
        corrupt=(b"page 1", b"PAGE 1"),
    )
    relay.start()
    try:
        started = time.monotonic()
        replay = crawl(
            tmp_path, server, "replay", store, "-s", "TRAVERSE_MODE=replay",
            "-s", "TRAVERSE_S3_RETRY=2", "-s", f"TRAVERSE_REPLAY_READER={reader}",
            *s3_server.setting_args(relay.endpoint),
        )  # fmt: skip
        took = time.monotonic() - started
    finally:
        relay.stop()

    assert replay.returncode == 1, replay.stderr[-3000:]
    error = failed_page(tmp_path, "replay", server)
    assert error["message"].startswith(
        f'no usable snapshot for sourceId "s::{server.url("/p1.html")}": read s3://{bucket}/st/'
    ), error
    assert named in error["message"], error
    warnings = [line for line in replay.stderr.splitlines() if "cannot be used" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], replay.stderr[-3000:]
    counted = stats(tmp_path, "replay")
    assert (counted["replay/unreadable"], counted["traverse/lost"]) == (1, 1)
    assert "replay/miss" not in counted
    assert relay.counts[fault] >= 1  # the page's reads met the fault
    if fault == "corrupt":  # a checksum that fails is not retried for the whole budget
        assert relay.counts["corrupt"] == 3
    if fault == "blackhole":  # each attempt's timeouts fit in the 2 s budget, not 30 s
        assert relay.counts["blackhole"] == 1
        assert took < 20, took


@pytest.mark.parametrize("reader", ["True", "False"])
def test_a_stored_body_changed_since_its_capture_is_not_replayed(server, tmp_path, reader):
    chain_site(server)
    store = tmp_path / "store"
    captured = crawl(tmp_path, server, "capture", str(store))
    assert captured.returncode == 0, captured.stderr[-3000:]
    server.shutdown()
    server.server_close()
    # The file stays a well-formed snapshot; only its body is no longer the one hashed.
    (path,) = (store / source_dir_name(page_id("s", server.url("/p1.html")))).glob("*.json")
    snapshot = json.loads(path.read_text(encoding="utf-8"))
    snapshot["body"] = snapshot["body"].replace("page 1", "page one")
    path.write_text(serialize(snapshot), encoding="utf-8")
    body_hash = snapshot["bodyHash"]

    replay = crawl(tmp_path, server, "replay", str(store), "-s", "TRAVERSE_MODE=replay",
                   "-s", f"TRAVERSE_REPLAY_READER={reader}")  # fmt: skip

    assert replay.returncode == 1, replay.stderr[-3000:]
    error = failed_page(tmp_path, "replay", server)
    assert error["message"] == (
        f'no usable snapshot for sourceId "s::{server.url("/p1.html")}": the body of the '
        f"snapshot fetched at {snapshot['fetchedAt']} does not match its bodyHash "
        f"{body_hash}: changed since its capture"
    )
    warnings = [line for line in replay.stderr.splitlines() if "cannot be used" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], replay.stderr[-3000:]
    assert stats(tmp_path, "replay")["traverse/lost"] == 1
    assert FilesystemSnapshotStore(str(store)).latest(page_id("s", server.url("/p1.html")))


def test_scrapy_extract_names_a_snapshot_the_bucket_cannot_serve(server, tmp_path, s3_server):
    chain_site(server)
    rules = tmp_path / "extract.toml"
    rules.write_text('[[types]]\nname = "page"\n[types.fields]\ntext = "css:p::text"\n')
    bucket = s3_server.new_bucket()
    store = f"s3://{bucket}/st"
    captured = crawl(tmp_path, server, "capture", store, *s3_server.setting_args())
    assert captured.returncode == 0, captured.stderr[-3000:]

    target = f"GET /{bucket}/st/{source_dir_name(page_id('s', server.url('/p1.html')))}/"
    relay = FaultProxy(
        s3_server.port,
        http=True,
        pick=lambda head: "error" if head.startswith(target.encode()) else None,
    )
    relay.start()
    try:
        run = scrapy(
            "extract", "-s", f"TRAVERSE_STORE={store}", "-s", f"TRAVERSE_EXTRACT={rules}",
            "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'capture'}", "-s", "TRAVERSE_S3_RETRY=1",
            "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}",
            *s3_server.setting_args(relay.endpoint), timeout=120,
        )  # fmt: skip
    finally:
        relay.stop()
    assert relay.counts["error"] >= 1
    assert run.returncode == 1, run.stderr[-3000:]
    said = [line for line in run.stderr.splitlines() if "could not be read" in line]
    assert len(said) == 1, run.stderr[-3000:]
    assert "500" in said[0] or "InternalError" in said[0], said
    assert "no snapshot in the store" not in run.stderr
    (items,) = (tmp_path / "items").glob("*.jsonl")
    texts = [json.loads(line)["fields"]["text"] for line in items.read_text().splitlines()]
    assert texts == ["page 0", "page 2"]  # the pages read whole keep their items
