"""Group commit of snapshot files (``snapshots/batch_write.py``, ``snapshots/writer.py``):
a batch's files are written, synced together, renamed and synced together; a file that
fails fails alone, and the writer process answers every file once, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.distributed_helpers import run_async
from traverse_crawl.snapshots import batch_write
from traverse_crawl.snapshots.batch_write import write_batch
from traverse_crawl.snapshots.file_text import encode
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, deserialize
from traverse_crawl.snapshots.writer import Delivered, SnapshotWriter, WriterLost

SYNC_MODES = [
    pytest.param(True, id="syncfs"),
    pytest.param(False, id="fsync-per-file"),
]


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("use_syncfs", SYNC_MODES)
def test_a_batch_writes_every_file_and_fails_only_the_broken_ones(
    tmp_path: Path, use_syncfs: bool
) -> None:
    if use_syncfs and batch_write._SYNCFS is None:
        pytest.skip("no syncfs(2) on this system")
    (tmp_path / "blocker").write_text("a file where a directory should be")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "old.json").write_bytes(b"old")

    def broken() -> bytes:
        raise ValueError("cannot render")

    jobs = [
        (str(tmp_path / "a" / "one.json"), lambda: b"one"),
        (str(tmp_path / "blocker" / "two.json"), lambda: b"two"),
        (str(tmp_path / "kept" / "old.json"), lambda: b"replaced"),
        (str(tmp_path / "b" / "three.json"), broken),
        (str(tmp_path / "b" / "four.json"), lambda: b"four" * 10_000),
    ]
    errors = write_batch(jobs, use_syncfs=use_syncfs)

    assert [type(e) for e in errors] == [
        type(None), FileExistsError, type(None), ValueError, type(None)
    ]  # fmt: skip
    assert (tmp_path / "a" / "one.json").read_bytes() == b"one"
    assert (tmp_path / "kept" / "old.json").read_bytes() == b"replaced"
    assert (tmp_path / "b" / "four.json").read_bytes() == b"four" * 10_000
    assert not (tmp_path / "b" / "three.json").exists()
    assert leftovers(tmp_path) == []


def _snapshot(i: int, body: str = "") -> dict[str, Any]:
    return {
        "sourceId": f"d{i % 7}", "url": f"https://example.test/{i}",
        "fetchedAt": f"2026-11-30T00:00:{i:04d}Z", "status": 200, "contentType": "html",
        "body": body or f"file {i}", "bodyHash": f"{i:064x}",
    }  # fmt: skip


def _write(
    root: Path, count: int, kill_after: int | None = None
) -> tuple[list[Delivered], SnapshotWriter]:
    """Hand ``count`` snapshots to a real writer process on an asyncio loop; with
    ``kill_after``, SIGKILL the child once that many answers are in. Runs until
    every file is answered and the child has ended."""
    store = FilesystemSnapshotStore(str(root))
    batches: list[Delivered] = []

    async def write() -> SnapshotWriter:
        def deliver(results: Delivered) -> None:
            batches.append(results)
            if kill_after is not None and sum(map(len, batches)) >= kill_after:
                writer.child.kill()

        writer = SnapshotWriter(asyncio.get_running_loop(), deliver)
        for i in range(count):
            snapshot = _snapshot(i, "x" * 30_000 if kill_after is not None else "")
            writer.submit(i, store.path(snapshot), snapshot)
        ended: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        writer.close(ended.set_result)
        await asyncio.wait_for(ended, 60)
        return writer

    return batches, run_async(write())


def test_the_writer_process_answers_every_file_once_in_order_in_batches(tmp_path: Path) -> None:
    total = 300
    batches, writer = _write(tmp_path, total)
    answered = [token for batch in batches for token, _ in batch]
    assert answered == list(range(total))
    assert all(error is None for batch in batches for _, error in batch)
    # Files queued while a batch was being synced were committed together.
    assert len(batches) < total
    assert max(len(b) for b in batches) <= batch_write.MAX_BATCH
    store = FilesystemSnapshotStore(str(tmp_path))
    for i in range(total):
        assert Path(store.path(_snapshot(i))).read_bytes() == encode(_snapshot(i))
    assert writer.summary["files"] == total and writer.summary["cpu_s"] > 0
    assert writer.child.returncode == 0
    with pytest.raises(RuntimeError):
        writer.submit(total, str(tmp_path / "late.json"), _snapshot(total))


def test_a_killed_writer_process_fails_every_file_it_had_not_answered(tmp_path: Path) -> None:
    total = 400
    batches, writer = _write(tmp_path, total, kill_after=1)
    answered = [token for batch in batches for token, _ in batch]
    assert answered == list(range(total))  # every file answered once, none left hanging
    lost = [error for batch in batches for _, error in batch if error is not None]
    assert lost, "the child was killed before it had written everything"
    assert all("ended (killed by SIGKILL) before the file was durable" in str(e) for e in lost)
    store = FilesystemSnapshotStore(str(tmp_path))
    for batch in batches:
        for token, error in batch:  # an answered file is whole; a lost one may or may not exist
            if error is None:
                assert deserialize(Path(store.path(_snapshot(token))).read_text()) is not None
    with pytest.raises(WriterLost, match="killed by SIGKILL"):
        writer.submit(total, str(tmp_path / "late.json"), _snapshot(total))
