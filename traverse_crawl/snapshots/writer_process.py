"""The capture's snapshot writer process: renders and group-commits the pages' files.

A process, not a thread: a writer thread shares the GIL with the crawl's reactor
thread, and each of its ten or so system calls per page (mkdir, open, write, fstat,
rename, close, the syncs) hands the GIL over and back, about 0.7 ms of the reactor's
wall time per page. Imports only the standard library, ``snapshots/batch_write.py``
and ``snapshots/file_text.py``: every capture pays this process's start-up.
"""

from __future__ import annotations

import functools
import marshal
import os
import resource
import select
import signal
import struct
from typing import Any

from traverse_crawl.snapshots.batch_write import MAX_BATCH, write_batch
from traverse_crawl.snapshots.file_text import encode

# The protocol (``snapshots/writer.py`` is the crawl's side): frames of a 4-byte
# big-endian length and a ``marshal`` of builtins (a snapshot is a dict of str, int,
# bytes and a list of str; marshal is built into the interpreter, so the child imports
# nothing for it, and both ends are the same interpreter). On the child's stdin: first
# ``{"use_syncfs": bool}``, then one ``(path, snapshot)`` per file. The child takes
# whatever whole frames are queued (up to MAX_BATCH) as one batch, writes it with
# ``write_batch`` and answers on stdout with one frame per batch: a list, in order, of
# ``None`` (the file is durable) or a ``Failure``. At EOF on stdin (the crawl closed
# the pipe, or died) it writes the whole frames it was given, then sends a summary
# dict (``batches``, ``files``, ``failed``, ``cpu_s``) and exits. A frame cut short
# by the crawl's death is dropped; no file is ever under its final name before it
# was whole on disk.
LENGTH = struct.Struct(">I")
CHUNK = 1 << 20  # bytes read from a pipe at a time
# A file that is not durable, as sent back: (errno, strerror, filename, message).
Failure = tuple[int | None, str | None, str | None, str]


def frame(obj: Any) -> bytes:
    data = marshal.dumps(obj)
    return LENGTH.pack(len(data)) + data


class Frames:
    """Frames read from a pipe: whole ones decoded in order, a partial one kept."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = bytearray()
        self.start = 0  # where the first frame not yet taken begins
        self.eof = False

    def read(self) -> bool:
        """Read what the pipe has (BlockingIOError if non-blocking and empty); False at EOF."""
        chunk = os.read(self.fd, CHUNK)
        if not chunk:
            self.eof = True
            return False
        if self.start:
            del self.buffer[: self.start]
            self.start = 0
        self.buffer += chunk
        return True

    def take(self, limit: int) -> list[Any]:
        """Up to ``limit`` whole frames."""
        taken: list[Any] = []
        buffer, start = self.buffer, self.start
        while len(taken) < limit and len(buffer) - start >= LENGTH.size:
            (size,) = LENGTH.unpack_from(buffer, start)
            end = start + LENGTH.size + size
            if end > len(buffer):
                break
            # Decoded from a view: a slice of the buffer would copy a large frame whole.
            with memoryview(buffer) as view, view[start + LENGTH.size : end] as data:
                taken.append(marshal.loads(data))
            start = end
        if start == len(buffer):  # all taken: a large frame's bytes are not kept till the next
            buffer.clear()
            start = 0
        self.start = start
        return taken


def failure(exc: BaseException | None) -> Failure | None:
    """What the crawl needs of an error to name it in the page's warning."""
    if exc is None:
        return None
    if isinstance(exc, OSError):
        filename = exc.filename if isinstance(exc.filename, str) else None
        return (exc.errno, exc.strerror, filename, str(exc))
    return (None, None, None, str(exc) or type(exc).__name__)


def next_batch(frames: Frames, limit: int = MAX_BATCH) -> list[Any]:
    """Wait for one frame, then take what else is queued now, up to ``limit``; [] at EOF."""
    batch = frames.take(limit)
    while not batch and frames.read():
        batch = frames.take(limit)
    poller = select.poll()
    poller.register(frames.fd, select.POLLIN)
    while len(batch) < limit and not frames.eof and poller.poll(0) and frames.read():
        batch += frames.take(limit - len(batch))
    return batch


def send(fd: int, obj: Any) -> bool:
    """Write one frame, blocking; False if the crawl is gone."""
    view = memoryview(frame(obj))
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def main() -> None:
    """The child process: commit the files read on stdin until EOF, then the summary."""
    # A Ctrl-C reaches the whole process group; the crawl decides when the writer is done.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    frames = Frames(0)
    config = next_batch(frames, 1)
    use_syncfs = bool(config and config[0].get("use_syncfs", True))
    summary = {"batches": 0, "files": 0, "failed": 0, "cpu_s": 0.0}
    listening = True  # the crawl reads answers; once it is gone, the files still are written
    bucket = config[0].get("bucket") if config else None
    if bucket:  # objects in a bucket, put as they come (snapshots/bucket_writer.py)
        from traverse_crawl.snapshots.bucket_writer import serve

        listening = serve(frames, bucket, summary, send, failure)
    while not bucket and (batch := next_batch(frames)):
        jobs = [(path, functools.partial(encode, snapshot)) for path, snapshot in batch]
        try:
            errors = write_batch(jobs, use_syncfs)
        except Exception as exc:  # a bug, not I/O: still never report a file written
            errors = [exc] * len(jobs)
        summary["batches"] += 1
        summary["files"] += len(jobs)
        summary["failed"] += sum(error is not None for error in errors)
        listening = listening and send(1, [failure(error) for error in errors])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    summary["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
    if listening:
        send(1, summary)
