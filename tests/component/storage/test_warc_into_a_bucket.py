"""WARC files to an S3 bucket: written locally while open, uploaded whole when closed."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import pytest_twisted
from warcio.archiveiterator import ArchiveIterator

from tests.component.replay.test_offline_replay import site
from tests.support.s3server import S3Server

pytestmark = pytest.mark.s3


def records(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(WARC-Type, WARC-Target-URI) of every record, file by file in name order."""
    found = []
    for name in sorted(files):
        for record in ArchiveIterator(io.BytesIO(files[name])):
            found.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI") or ""))
    return found


def directory_files(root: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(root.iterdir())}


@pytest_twisted.ensureDeferred
async def test_warc_files_in_a_bucket_hold_the_records_a_directory_would(
    server, crawl, tmp_path, s3_server: S3Server
):
    site(server)
    seed = server.url("/home.html")
    small = {"TRAVERSE_MAX_DEPTH": 3, "TRAVERSE_WARC_MAX_SIZE": 4000}  # several rollovers
    local = await crawl(
        settings={**small, "TRAVERSE_WARC_DIR": str(tmp_path / "warc")}, url=seed, source_id="s"
    )
    bucket = s3_server.new_bucket()
    settings = {
        **s3_server.settings(),
        **small,
        "TRAVERSE_STORE": f"s3://{bucket}/snapshots",
        "TRAVERSE_WARC_DIR": f"s3://{bucket}/warc",
    }
    remote = await crawl(settings=settings, url=seed, source_id="s")
    assert remote.stats["snapshot/stored"] == 8

    uploaded = s3_server.objects(bucket, "warc/")
    on_disk = directory_files(tmp_path / "warc")
    assert len(uploaded) > 2 and len(on_disk) > 2
    assert all(name.endswith(".warc.gz") for name in uploaded)  # no .open left, nothing else
    # The same records (their order is the order the responses arrived in).
    assert sorted(r for r in records(uploaded) if r[0] != "warcinfo") == sorted(
        r for r in records(on_disk) if r[0] != "warcinfo"
    )
    assert records(uploaded)[0][0] == "warcinfo"
    assert local.stats.get("warc/responses") == remote.stats.get("warc/responses")
    # The payload digests for later revisits are kept beside the store's snapshots.
    assert "traverse-payload-digests.jsonl" in s3_server.objects(bucket, "snapshots/")
    assert not any(p.name.startswith("s3:") for p in tmp_path.iterdir())
