"""The crawl's end of the WARC writer process (``warc/writer.py``): never a blocked loop.

Jobs are pickled onto the child's stdin without ever blocking the crawl's event
loop (asyncio's ``add_writer`` takes what the pipe had no room for); ``backlog``
says how much waits in memory, so the crawl can pause while the writer is behind.
The child's stdout carries its notices and, at the end, its summary
(``add_reader``); its end of file while the crawl still writes means it died.
A writer that takes nothing for ``stall_timeout`` seconds while jobs wait is
stalled: ``gone`` is called for it as for a dead one, and ``close`` gives up on it
after as long (it is killed), so a stop always ends.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from traverse_crawl.utils.child_process import start_writer
from traverse_crawl.warc.writer import Summary

_LENGTH = struct.Struct(">I")


class Loop(Protocol):
    def add_reader(self, fd: int, callback: Callable[[], None]) -> Any: ...
    def remove_reader(self, fd: int) -> Any: ...
    def add_writer(self, fd: int, callback: Callable[[], None]) -> Any: ...
    def remove_writer(self, fd: int) -> Any: ...
    def call_later(self, delay: float, callback: Callable[[], None]) -> Any: ...


def frame(job: Any) -> bytes:
    data = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


class WriterPipe:
    """One writer process. ``notice(text)`` for each failure it reports while it
    runs; ``gone(reason)`` once if it dies or stalls before ``close``."""

    def __init__(
        self,
        loop: Loop,
        config: dict[str, Any],
        stall_timeout: float,
        notice: Callable[[str], None],
        gone: Callable[[str], None],
    ) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        boot = "from traverse_crawl.warc.writer import main; main()"
        self.proc = start_writer([sys.executable, "-c", boot], env)  # OSError: none started
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.loop = loop
        self.stall_timeout = stall_timeout
        self.notice, self.gone = notice, gone
        self.stdin, self.stdout = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdout, False)
        self.pending: collections.deque[tuple[memoryview, bool]] = collections.deque()
        self.backlog = 0  # bytes waiting in memory for the pipe
        self.head_started = False  # the first pending frame is partly written
        self.progress = time.monotonic()  # when the child last took bytes
        self.writing = False
        self.timer: Any = None
        self.output = bytearray()
        self.summary: Summary | None = None
        self.exited = False  # the child closed its stdout: it has ended
        self.closing = False
        self.failed = ""  # why it is gone (died or stalled), once it is
        loop.add_reader(self.stdout, self._readable)
        self._queue(frame(config), resendable=False)  # goes out with the first job

    # -- jobs ------------------------------------------------------------------

    def send(self, data: bytes) -> bool:
        """Queue one framed job; False once the writer is gone (the job is not kept)."""
        if self.failed:
            return False
        self._queue(data, resendable=True)
        if not self.writing:
            self._flush()
        return not self.failed

    def _queue(self, data: bytes, resendable: bool) -> None:
        self.pending.append((memoryview(data), resendable))
        self.backlog += len(data)

    def unsent(self) -> tuple[list[bytes], int]:
        """The jobs the child never got a byte of (another writer can take them), and how
        many it got only part of (lost)."""
        jobs = [bytes(data) for data, resendable in self.pending if resendable]
        partly = int(self.head_started and bool(self.pending) and self.pending[0][1])
        return (jobs[1:] if partly else jobs), partly

    def _flush(self) -> None:
        while self.pending:
            data, resendable = self.pending[0]
            try:
                written = os.write(self.stdin, data)
            except BlockingIOError:
                break
            except OSError:  # EPIPE: the child is gone (its stdout's end says the rest)
                self._fail("ended")
                return
            self.progress = time.monotonic()
            self.backlog -= written
            if written < len(data):
                self.pending[0] = (data[written:], resendable)
                self.head_started = True
            else:
                self.pending.popleft()
                self.head_started = False
        waiting = bool(self.pending)
        if waiting != self.writing:
            self.writing = waiting
            if waiting:
                self.loop.add_writer(self.stdin, self._flush)
                self._watch()
            else:
                self.loop.remove_writer(self.stdin)

    def _watch(self) -> None:
        """While jobs wait, check every second that the child still takes them."""
        self.timer = None
        if not self.writing or self.failed:
            return
        if time.monotonic() - self.progress > self.stall_timeout:
            self._fail(f"took nothing for {self.stall_timeout:g} s")
            return
        self.timer = self.loop.call_later(1.0, self._watch)

    # -- the child's answers ------------------------------------------------------

    def _readable(self) -> None:
        while True:
            try:
                data = os.read(self.stdout, 1 << 16)
            except BlockingIOError:
                break
            except OSError:
                data = b""
            if not data:
                self._ended()
                return
            self.output += data
            while b"\n" in self.output:
                line, _, rest = bytes(self.output).partition(b"\n")
                self.output = bytearray(rest)
                self._line(line)

    def _line(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict) and isinstance(message.get("notice"), str):
            self.notice(message["notice"])
        elif isinstance(message, dict) and isinstance(message.get("summary"), dict):
            try:
                self.summary = Summary(**message["summary"])
            except TypeError:
                pass

    def _ended(self) -> None:
        self.exited = True
        self.loop.remove_reader(self.stdout)
        self.proc.poll()  # reaped: no zombie while the crawl goes on
        if self.summary is None:
            self._fail("ended")

    def _fail(self, how: str) -> None:
        """The child died or stalled: stop feeding it, and say so once (not at close)."""
        if self.failed:
            return
        code = self.proc.poll()
        if how == "ended" and code is None:
            # A broken pipe or the end of its stdout comes a moment before the kernel
            # lets the child be reaped; wait that moment (once, on this failure path
            # only) so the message names the signal or exit code that ended it.
            try:
                code = self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                code = None
        if how == "ended" and code is not None:
            how = f"ended with {_status(code)}"
        self.failed = how
        self._stop_writing()
        if not self.exited:
            self._kill()
        if not self.closing:
            self.gone(how)

    def _stop_writing(self) -> None:
        if self.writing:
            self.loop.remove_writer(self.stdin)
            self.writing = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _kill(self) -> None:
        try:
            os.kill(self.proc.pid, signal.SIGKILL)  # a stopped process is killed too
        except OSError:
            pass

    # -- the end -------------------------------------------------------------------

    async def close(self) -> Summary:
        """Hand the child what waits, close its stdin and wait for its summary: while
        it makes progress, or at most ``stall_timeout`` seconds after it stops."""
        self.closing = True
        while self.pending and not self.failed:
            if not self.writing:
                self._flush()
            await asyncio.sleep(0.02)
        if not self.proc.stdin.closed:  # type: ignore[union-attr]
            self._stop_writing()
            self.proc.stdin.close()  # type: ignore[union-attr]
        deadline = time.monotonic() + self.stall_timeout
        while not self.exited and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        if not self.exited:
            self.failed = self.failed or f"took more than {self.stall_timeout:g} s to finish"
            self._kill()
            self.loop.remove_reader(self.stdout)
        await asyncio.sleep(0)
        self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]
        if self.summary is not None and not self.failed:
            return self.summary
        return Summary(failures=1, error=f"the WARC writer process {self.failed or 'ended'}")

    def abandon(self) -> None:
        """``close`` for a loop that is stopping (it cannot be awaited): the same bounds,
        waited for here; ``failed`` says when the writer had to be killed."""
        self.closing = True
        self._stop_writing()
        if not self.failed:
            poller = select.poll()
            poller.register(self.stdin, select.POLLOUT)
            while self.pending and not self.failed:
                if time.monotonic() - self.progress > self.stall_timeout:
                    self.failed = f"took nothing for {self.stall_timeout:g} s"
                    break
                if poller.poll(100):
                    self._flush()
                    self._stop_writing()
        if not self.proc.stdin.closed:  # type: ignore[union-attr]
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=0 if self.failed else self.stall_timeout)
        except subprocess.TimeoutExpired:
            self.failed = self.failed or f"took more than {self.stall_timeout:g} s to finish"
        if self.proc.returncode is None:
            self._kill()
            self.proc.wait()


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
