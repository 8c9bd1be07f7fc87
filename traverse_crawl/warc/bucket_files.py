"""WARC files and payload digests for ``s3://`` locations (docs/object-storage.md).

An object cannot be appended to, so a WARC file is written locally while it is open
(``<name>.warc.gz.open`` in a staging directory of the writer process's own) and
uploaded whole when it is closed, at a rollover or at the end of the crawl; large
files go up in parts (``storage/bucket.py``), and the object appears only once the
last part is committed. A crash leaves no object (the open file is local), never a
torn complete one. Uploads run in a thread of the writer process, so a rollover's
upload does not hold up the records that follow.

The payload-digest index (``warc/digests.py``) of a store in a bucket is read from
the bucket at start and written back, merged with what is there then, at the end.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from traverse_crawl.storage.bucket import BucketLocation
from traverse_crawl.warc.digests import FILE_NAME, DigestIndex
from traverse_crawl.warc.records import RollingWarcFiles


class BucketWarcFiles(RollingWarcFiles):
    def __init__(
        self,
        location: BucketLocation,
        prefix: str,
        max_size: int,
        info: dict[str, str],
        pid: int = 0,
    ) -> None:
        self.location = location
        self.staging = tempfile.mkdtemp(prefix="traverse-warc-")
        super().__init__(self.staging, prefix, max_size, info, pid)
        self.uploads = ThreadPoolExecutor(1, thread_name_prefix="warc-upload")
        self.pending: list[Future[None]] = []
        self.uploaded: list[str] = []

    def close(self) -> None:
        """Close the open file locally and queue its upload."""
        before = len(self.closed_files)
        super().close()
        if len(self.closed_files) > before:
            self.pending.append(self.uploads.submit(self._upload, self.closed_files[-1]))

    def _upload(self, path: str) -> None:
        name = os.path.basename(path)
        try:
            self.location.write_file(name, path)
        except OSError as exc:
            raise OSError(f"{exc}; the file is kept at {path}") from exc
        os.unlink(path)
        self.uploaded.append(self.location.shown(name))

    def finish(self) -> list[str]:
        """Wait for every upload; the messages of those that failed (files kept locally)."""
        failed = []
        for upload in self.pending:
            error = upload.exception()
            if error is not None:
                failed.append(str(error))
        self.pending.clear()
        self.uploads.shutdown()
        if not failed:
            shutil.rmtree(self.staging, ignore_errors=True)
        return failed


class BucketDigestIndex(DigestIndex):
    """The digest index of a store in a bucket, kept in a local copy while the crawl runs."""

    def __init__(self, store: BucketLocation) -> None:
        self.staging = tempfile.mkdtemp(prefix="traverse-digests-")
        super().__init__(self.staging)
        self.store = store
        self.start = b""
        with contextlib.suppress(OSError):
            self.start = store.read(FILE_NAME) or b""
        with open(self.path, "wb") as handle:
            handle.write(self.start)

    def close(self) -> None:
        """Upload the lines added, after whatever the bucket holds now (another worker's)."""
        super().close()
        try:
            with open(self.path, "rb") as handle:
                added = handle.read()[len(self.start) :]
            if added:
                now = self.store.read(FILE_NAME) or b""
                if now and not now.endswith(b"\n"):
                    now += b"\n"
                self.store.write(FILE_NAME, now + added)
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)


def bucket_warc_files(directory: dict[str, Any], **files: Any) -> BucketWarcFiles:
    """The writer process's files for a WARC prefix in a bucket (a ``describe()``)."""
    return BucketWarcFiles(BucketLocation.from_description(directory), **files)


def bucket_digest_index(store: dict[str, Any]) -> BucketDigestIndex:
    """The digest index of a store in a bucket (a ``describe()``)."""
    return BucketDigestIndex(BucketLocation.from_description(store))
