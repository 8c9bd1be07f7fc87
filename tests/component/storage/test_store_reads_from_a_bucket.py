"""A page's snapshots read from a bucket: the directory's answers, read ahead in parallel.

Each GET is a round trip; a page captured many times is read with several GETs in
flight. The endpoint is made slow by a TCP relay in front of moto's server that holds
each GET of the page's snapshots.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.s3server import Relay, S3Server
from traverse_crawl.snapshots.store import (
    READ_AHEAD,
    FilesystemSnapshotStore,
    open_snapshot_store,
    source_dir_name,
)

pytestmark = pytest.mark.s3

CAPTURES = 16
HOLD = 0.3  # seconds the relay holds each GET of a snapshot


def capture(i: int) -> Any:
    body = f"<p>capture {i}</p>"
    return {
        "sourceId": "shop::https://example.test/", "url": "https://example.test/",
        "fetchedAt": f"2026-11-30T00:00:{i:02d}.000Z", "status": 200, "contentType": "html",
        "body": body, "bodyHash": hashlib.sha256(body.encode()).hexdigest(),
    }  # fmt: skip


def test_a_page_captured_many_times_reads_as_from_a_directory_with_gets_in_flight(
    s3_server: S3Server, tmp_path: Path
) -> None:
    bucket = s3_server.new_bucket()
    page = capture(0)["sourceId"]
    directory = FilesystemSnapshotStore(str(tmp_path / "store"))
    writer = open_snapshot_store(f"s3://{bucket}/st", s3_server.settings())
    for i in range(CAPTURES):
        directory.put(capture(i))
        writer.put(capture(i))
    damaged = f"st/{source_dir_name(page)}/2026-11-30T00-00-99.000Z-torn.json"
    s3_server.client().put_object(Bucket=bucket, Key=damaged, Body=b'{"sourceId": ')
    (tmp_path / "store" / source_dir_name(page) / damaged.rsplit("/", 1)[1]).write_bytes(
        b'{"sourceId": '
    )

    held, lock = [0], threading.Lock()

    def hold(data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0]
        if line.startswith(b"GET ") and source_dir_name(page).encode() in line and b"?" not in line:
            with lock:
                held[0] += 1
            time.sleep(HOLD)

    relay = Relay(s3_server.port, hold)
    relay.start()
    try:
        store = open_snapshot_store(f"s3://{bucket}/st", s3_server.settings(relay.endpoint))
        found: list[str] = []
        started = time.monotonic()
        listed = store.list(page, found)
        took = time.monotonic() - started
        latest = store.latest(page)
    finally:
        relay.stop()
    expected: list[str] = []
    assert listed == directory.list(page, expected)
    assert [s["fetchedAt"] for s in listed][:2] == ["2026-11-30T00:00:15.000Z",
                                                     "2026-11-30T00:00:14.000Z"]  # fmt: skip
    assert latest == directory.latest(page) == capture(CAPTURES - 1)
    assert len(found) == len(expected) == 1 and "is damaged" in found[0]
    assert held[0] == 2 * (CAPTURES + 1)  # every object read once by list, once by latest
    # One GET after another would take (CAPTURES + 1) * HOLD; READ_AHEAD at once, a fraction.
    serial = (CAPTURES + 1) * HOLD
    assert took < serial / 2, (took, serial, READ_AHEAD)
