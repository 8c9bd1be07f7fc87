"""The capture's snapshot writer process: renders and group-commits the pages' files.

A process, not a thread: a writer thread shares the GIL with the crawl's reactor
thread, and each of its ten or so system calls per page (mkdir, open, write, fstat,
rename, close, the syncs) hands the GIL over and back, about 0.7 ms of the reactor's
wall time per page. Imports only the standard library, ``snapshots/batch_write.py``
and ``snapshots/file_text.py``: every capture pays this process's start-up. The
crawl's side is ``snapshots/writer.py``.
"""

from __future__ import annotations

import functools

from traverse_crawl.snapshots.batch_write import MAX_BATCH, write_batch
from traverse_crawl.snapshots.file_text import encode
from traverse_crawl.utils.frames import begin, finish, next_batch, send

# The protocol (the frames of ``utils/frames.py``): on the child's stdin first
# ``{"use_syncfs": bool, "bucket": where or None}``, then one ``(path, snapshot)`` per
# file (a snapshot is a dict of str, int, bytes and a list of str). The child takes
# whatever whole frames are queued (up to MAX_BATCH) as one batch, writes it with
# ``write_batch`` and answers on stdout with one frame per batch: a list, in order, of
# ``None`` (the file is durable) or a ``Failure``. At EOF on stdin (the crawl closed
# the pipe, or died) it writes the whole frames it was given, then sends its summary
# (``batches``, ``files``, ``failed``, ``cpu_s``) and exits. No file is ever under its
# final name before it was whole on disk.
# A file that is not durable, as sent back: (errno, strerror, filename, message).
Failure = tuple[int | None, str | None, str | None, str]


def failure(exc: BaseException | None) -> Failure | None:
    """What the crawl needs of an error to name it in the page's warning."""
    if exc is None:
        return None
    if isinstance(exc, OSError):
        filename = exc.filename if isinstance(exc.filename, str) else None
        return (exc.errno, exc.strerror, filename, str(exc))
    return (None, None, None, str(exc) or type(exc).__name__)


def main() -> None:
    """The child process: commit the files read on stdin until EOF, then the summary."""
    frames, config = begin()
    use_syncfs = bool(config and config.get("use_syncfs", True))
    summary = {"batches": 0, "files": 0, "failed": 0}
    listening = True  # the crawl reads answers; once it is gone, the files still are written
    bucket = config.get("bucket") if config else None
    if bucket:  # objects in a bucket, put as they come (snapshots/bucket_writer.py)
        from traverse_crawl.snapshots.bucket_writer import serve

        listening = serve(frames, bucket, summary, send, failure)
    while not bucket and config is not None and (batch := next_batch(frames, MAX_BATCH)):
        jobs = [(path, functools.partial(encode, snapshot)) for path, snapshot in batch]
        try:
            errors = write_batch(jobs, use_syncfs)
        except Exception as exc:  # a bug, not I/O: still never report a file written
            errors = [exc] * len(jobs)
        summary["batches"] += 1
        summary["files"] += len(jobs)
        summary["failed"] += sum(error is not None for error in errors)
        listening = listening and send(1, [failure(error) for error in errors])
    if listening:
        finish(summary)
