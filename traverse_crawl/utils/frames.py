"""The frames the crawl and each of its child processes speak, both ways.

The crawl's children (the snapshot writer, the WARC writer, replay's reader, the
extraction process: each package's ``*_child.py``) read frames on their stdin and
answer in frames on their stdout; the crawl's end of every one is
``utils/child_process.py``. A frame is a 4-byte big-endian length and a ``marshal`` of
builtins: marshal is built into the interpreter, so a child imports nothing for it,
and both ends are the same interpreter. Standard library only: every child imports it.

The conversation: the crawl's first frame is the child's configuration (a dict), then
its jobs, in order. The child answers with frames that are never dicts, and at EOF on
its stdin (the crawl closed the pipe, or died) it finishes what it was given, sends
its summary, a dict with at least ``cpu_s`` (its CPU seconds), and exits. A frame cut
short by the other side's death is dropped.
"""

from __future__ import annotations

import marshal
import os
import resource
import select
import signal
from struct import Struct
from typing import Any

LENGTH = Struct(">I")
CHUNK = 1 << 20  # bytes read from a pipe at a time
JOINED = 1 << 16  # a frame at most this large goes out in one write


def frame(obj: Any) -> bytes:
    data = marshal.dumps(obj)
    return LENGTH.pack(len(data)) + data


class Frames:
    """Frames read from a pipe (``read``) or handed in (``feed``): whole ones decoded in
    order, a partial one kept."""

    def __init__(self, fd: int = -1) -> None:
        self.fd = fd
        self.poller: select.poll | None = None  # the child's, made once: ``ready``
        self.scratch: memoryview | None = None  # the child's, made once: ``read``
        self.buffer = bytearray()
        self.start = 0  # where the first frame not yet taken begins
        self.eof = False

    def feed(self, data: bytes | memoryview) -> None:
        if self.start:
            del self.buffer[: self.start]
            self.start = 0
        self.buffer += data

    def read(self) -> bool:
        """Read what the pipe has (BlockingIOError if non-blocking and empty); False at EOF."""
        if self.scratch is None:
            # Read into one buffer made once: a fresh CHUNK for each read (``os.read``)
            # cost the child more than the rest of a small frame's handling.
            self.scratch = memoryview(bytearray(CHUNK))
        size = os.readv(self.fd, [self.scratch])
        if not size:
            self.eof = True
            return False
        self.feed(self.scratch[:size])
        return True

    def ready(self, timeout: float) -> bool:
        """Whether the pipe has bytes (or EOF) within ``timeout`` seconds."""
        if self.poller is None:
            self.poller = select.poll()
            self.poller.register(self.fd, select.POLLIN)
        return bool(self.poller.poll(max(0, int(timeout * 1000))))

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


# -- the child's side --------------------------------------------------------------


def next_batch(frames: Frames, limit: int) -> list[Any]:
    """Wait for one frame, then take what else is queued now, up to ``limit``; [] at EOF."""
    batch = frames.take(limit)
    while not batch and frames.read():
        batch = frames.take(limit)
    while len(batch) < limit and not frames.eof and frames.ready(0) and frames.read():
        batch += frames.take(limit - len(batch))
    return batch


def more_within(frames: Frames, timeout: float) -> bool:
    """Whether more comes (a frame's bytes, or EOF) within ``timeout`` seconds."""
    return len(frames.buffer) > frames.start or frames.eof or frames.ready(timeout)


def send(fd: int, obj: Any) -> bool:
    """Write one frame, blocking; False if the crawl is gone. A large one goes without
    joining its length to its data: a large page is not copied."""
    data = marshal.dumps(obj)
    head = LENGTH.pack(len(data))
    parts = [head + data] if len(data) <= JOINED else [head, data]
    try:
        for part in parts:
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view) :]
    except OSError:
        return False
    return True


def begin() -> tuple[Frames, dict[str, Any] | None]:
    """A child's start: its stdin's frames and the crawl's configuration (None if the
    crawl closed the pipe first). A Ctrl-C reaches the whole process group; the crawl
    decides when its child is done, so SIGINT and SIGTERM are ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    frames = Frames(0)
    config = next_batch(frames, 1)
    return frames, (config[0] if config else None)


def finish(summary: dict[str, Any] | None = None) -> bool:
    """A child's end: its summary, with its own CPU seconds, as its last frame."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return send(1, {**(summary or {}), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})
