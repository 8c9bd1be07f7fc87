"""The crawl's side of replay's reader process (``core.replaychild``).

``ReplayReader`` starts the child and asks it for pages by id; each ``read``
returns a ``Read`` whose ``answer`` is set, in request order, when the child's
frame comes in on the crawl's event loop (the child's stdout is watched with the
loop's ``add_reader``: one wake-up per frame of up to 16 answers). ``ready(read)``
is then called for a read that someone waits for (``read.waiting``).

If the child ends (killed, crashed), every read not answered is marked ``lost``
and given to ``ready`` if waited for, and every later ``read`` returns a lost one:
the caller then reads the store itself, so a lost reader costs speed, never a page.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from traverse_crawl.core.childproc import start_writer
from traverse_crawl.core.replaychild import Answer, PageWork
from traverse_crawl.core.snapshotchild import Frames, frame
from traverse_crawl.core.snapshotwriter import Loop


class Read:
    __slots__ = ("answer", "lost", "page_id", "waiting")

    def __init__(self, page_id: str) -> None:
        self.page_id = page_id
        self.answer: Answer | None = None
        self.waiting = False  # the page's request waits for this answer
        self.lost = False  # no answer will come: read the store in the crawl


def _child_command() -> list[str]:
    # -I: no environment or user site, so the crawl's settings of PYTHONPATH and the
    # like cannot change what it runs; the package by path, site-packages for lxml.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    boot = (
        f"import sys; sys.path.insert(0, {root!r}); "
        "from traverse_crawl.core.replaychild import main; main()"
    )
    return [sys.executable, "-I", "-c", boot]


class ReplayReader:
    def __init__(
        self, loop: Loop, root: str, max_links: int | None, ready: Callable[[Read], None]
    ) -> None:
        self.loop = loop
        self.ready = ready
        self.proc = start_writer(_child_command())  # OSError: the caller reads the store itself
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdout, False)
        self.answers = Frames(self.stdout)
        self.reads: collections.deque[Read] = collections.deque()  # asked, not yet answered
        self.backlog: collections.deque[memoryview] = collections.deque()
        self.writing = False
        self.ended = False
        self.asked = 0
        # A recent large answer's size (its text and bytes): the largest, less an eighth
        # for each answer since, so that one large page does not slow the rest for long.
        self.large = 64 * 1024
        loop.add_reader(self.stdout, self._readable)
        self._send({"root": root, "max_links": max_links})

    @property
    def alive(self) -> bool:
        return not self.ended

    def read(self, page_id: str) -> Read:
        read = Read(page_id)
        if self.ended:
            read.lost = True
        else:
            self.reads.append(read)
            self.asked += 1
            self._send(page_id)
        return read

    def close(self) -> None:
        """EOF to the child, which exits; what it had not answered is lost."""
        if not self.ended:
            self._end(wait=False)

    def reap(self, timeout: float = 5.0) -> float | None:
        """Wait for the closed child's exit (killed after ``timeout``); its CPU seconds."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:  # stuck in a read of a hung file system
                    self.proc.kill()
                    pid, status, usage = os.wait4(self.proc.pid, 0)
                    break
                time.sleep(0.005)
        except ChildProcessError:  # reaped already (``_end`` after its EOF)
            return None
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_utime + usage.ru_stime

    def _send(self, obj: Any) -> None:
        self.backlog.append(memoryview(frame(obj)))
        self._flush()

    def _flush(self) -> None:
        while self.backlog:
            try:
                written = os.write(self.stdin, self.backlog[0])
            except BlockingIOError:
                break
            except OSError:  # the child is gone: its stdout's EOF ends the reads
                self.backlog.clear()
                break
            if written < len(self.backlog[0]):
                self.backlog[0] = self.backlog[0][written:]
            else:
                self.backlog.popleft()
        if bool(self.backlog) != self.writing and not self.ended:
            self.writing = not self.writing
            if self.writing:
                self.loop.add_writer(self.stdin, self._flush)
            else:
                self.loop.remove_writer(self.stdin)

    def _readable(self) -> None:
        while True:
            try:
                if not self.answers.read():
                    break
            except BlockingIOError:
                break
            except OSError:
                self.answers.eof = True
                break
        for found in self.answers.take(sys.maxsize):
            for snapshot, damaged, failed, body, work in found:
                size = 1
                if snapshot is not None:
                    text, data = snapshot.get("body"), snapshot.get("bodyBytes")
                    size += len(body or b"") + len(text or "") + len(data or b"")
                self.large = max(size, self.large - self.large // 8)
                read = self.reads.popleft()
                read.answer = Answer(
                    snapshot, damaged, failed, body, None if work is None else PageWork(*work)
                )
                if read.waiting:
                    self.ready(read)
        if self.answers.eof:
            self._end(wait=True)

    def _end(self, wait: bool) -> None:
        self.ended = True
        self.loop.remove_reader(self.stdout)
        if self.writing:
            self.loop.remove_writer(self.stdin)
            self.writing = False
        self.backlog.clear()
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()  # EOF: the child exits
        self.proc.stdout.close()
        if wait:
            self.proc.wait()
        lost, self.reads = list(self.reads), collections.deque()
        for read in lost:
            read.lost = True
            if read.waiting:
                self.ready(read)
