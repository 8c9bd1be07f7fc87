"""The crawl's end of a child process fed frames on its stdin, answering in frames.

Shared by the capture's snapshot writer (``snapshots/writer.py``), replay's reader
(``replay/reader.py``) and the extraction process (``extraction/process.py``); the frames
are ``snapshots/writer_process.py``'s. Neither direction blocks the crawl's event loop
(anything with asyncio's ``add_reader``/``add_writer``): what the child's stdin has no
room for waits in memory.
"""

from __future__ import annotations

import collections
import os
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from traverse_crawl.snapshots.writer_process import Frames, frame
from traverse_crawl.utils.child_process import start_writer


class Loop(Protocol):
    def add_reader(self, fd: int, callback: Callable[[], None]) -> Any: ...
    def remove_reader(self, fd: int) -> Any: ...
    def add_writer(self, fd: int, callback: Callable[[], None]) -> Any: ...
    def remove_writer(self, fd: int) -> Any: ...
    def call_later(self, delay: float, callback: Callable[[], None]) -> Any: ...


def package_command(module: str, site_packages: bool) -> list[str]:
    """Run ``module.main()`` of this package, found by path; ``-I``: no environment
    or user site, so the crawl's ``PYTHONPATH`` and the like cannot change what runs;
    without ``site_packages`` (``-S``) the start is cheaper, for stdlib-only children."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    # Once main() returned, the heap is frozen: the interpreter's exit then skips its
    # full collection of every object (runtime/heap_extension.py, freeze_at_exit), which
    # the crawl would wait for when it reaps the child.
    boot = (
        f"import sys; sys.path.insert(0, {root!r}); from {module} import main; main(); "
        "import gc; gc.freeze()"
    )
    return [sys.executable, "-I", *([] if site_packages else ["-S"]), "-c", boot]


class FramedChild:
    """Starts the child (OSError if it cannot) and watches its stdout with ``_readable``."""

    def __init__(self, loop: Loop, command: list[str]) -> None:
        self.loop = loop
        self.proc = start_writer(command)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdout, False)
        self.answers = Frames(self.stdout)
        self.backlog: collections.deque[memoryview] = collections.deque()
        self.writing = False  # waiting for the pipe to take the backlog
        self.ended = False
        loop.add_reader(self.stdout, self._readable)

    @property
    def alive(self) -> bool:
        """The child still answers: its stdout has not ended, nor been let go."""
        return not self.ended

    def _readable(self) -> None:
        raise NotImplementedError

    def reap(self, timeout: float = 5.0) -> float | None:
        """Wait for the closed child's exit, killed after ``timeout`` (stuck in a read of a
        hung file system, or in a page past every bound); its CPU seconds, or None if it
        was reaped already (after its EOF)."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > deadline:
                    self.proc.kill()
                    pid, status, usage = os.wait4(self.proc.pid, 0)
                    break
                time.sleep(0.005)
        except ChildProcessError:
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
            except OSError:  # the child is gone: its stdout's EOF tells the rest
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

    def _frames(self) -> list[Any]:
        """Every whole frame the pipe holds now; ``answers.eof`` once the child closed it."""
        while True:
            try:
                if not self.answers.read():
                    break
            except BlockingIOError:
                break
            except OSError:
                self.answers.eof = True
                break
        return self.answers.take(sys.maxsize)

    def _stop_watching(self) -> None:
        """No more reading or writing: the child has ended, or is being let go."""
        self.ended = True
        self.loop.remove_reader(self.stdout)
        if self.writing:
            self.loop.remove_writer(self.stdin)
            self.writing = False
        self.backlog.clear()
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
