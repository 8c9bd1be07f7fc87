"""The crawl's end of each of its child processes: start, frames both ways, stall, end.

Every child of the crawl (the snapshot writer, the WARC writer, replay's reader, the
extraction process) is a ``ChildProcess``, and speaks the frames of ``utils/frames.py``.
It is started with asyncio's ``loop.subprocess_exec``: the crawl's reactor is Twisted's
asyncio reactor, so this is the reactor's own process support (the child is reaped by
asyncio's child watcher), and it works as well on a plain asyncio loop, which a command
without a crawl (``scrapy extract``) runs in a thread of its own.

Sending never blocks the event loop: what the child's stdin has no room for waits in
memory (``backlog``), in the pipe transport's buffer. The pipe is grown, so that the
crawl runs ahead of the snapshot writer by about 40 pages of 22 KB before frames wait in
memory. One watchdog: while the crawl waits for an answer (``owed``), or for the end of
a closed child, a child that answers nothing for ``stall_timeout`` seconds is killed.
However the child ends (its own exit, a kill, a start that failed), ``ended`` is called
once, when it has exited and been reaped, and ``how`` describes it. What is lost with
a child is its owner's policy, not this module's.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from traverse_crawl.utils.frames import Frames, frame

PIPE_SIZE = 1 << 20


def command(module: str, site_packages: bool) -> list[str]:
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


def exit_description(returncode: int | None) -> str:
    """How a process ended, from its return code: ``killed by SIGKILL``, ``exit status 1``."""
    if returncode is None:
        return "exit status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


class ChildProcess(asyncio.SubprocessProtocol):
    """One child: ``module.main()`` started at once, fed ``config`` as its first frame.

    ``answers(frames)`` is called on the loop with the child's answers as they come,
    in order; its summary (its last frame, a dict) is kept as ``summary``. ``ended()``
    is called once, after the last answer. ``owed()`` says whether the crawl waits for
    an answer; with ``stall_timeout``, a child that answers nothing for that long while
    it does is killed (``stalled``; ``stall_setting`` is named in ``how``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        module: str,
        config: Any,
        answers: Callable[[list[Any]], None],
        ended: Callable[[], None],
        *,
        site_packages: bool = True,
        owed: Callable[[], bool] = lambda: False,
        stall_timeout: float | None = None,
        stall_setting: str = "",
    ) -> None:
        self.loop = loop
        self.module = module
        self.on_answers, self.on_ended, self.owed = answers, ended, owed
        self.stall_timeout, self.stall_setting = stall_timeout, stall_setting
        self.transport: asyncio.SubprocessTransport | None = None
        self.stdin: asyncio.WriteTransport | None = None
        self.early: list[bytes] = []  # frames sent before the child was there
        self.sent = 0  # bytes handed to ``send``, in all
        self.frames = Frames()
        self.summary: dict[str, Any] = {}
        self.closing = False
        self.ended = False
        self.stalled = False
        self.start_error: BaseException | None = None
        self.returncode: int | None = None
        self.pid: int | None = None
        self.idle = True  # nothing owed: the next job starts the stall clock
        self.since = time.monotonic()  # the last answer, or the job after an idle spell
        self.timer: asyncio.TimerHandle | None = None
        self.exited = False  # reaped
        self.answered = False  # its stdout closed
        self.done: asyncio.Future[None] = loop.create_future()
        self.send_frame(frame(config))
        self.starting = loop.create_task(self._start(command(module, site_packages)))

    # -- start ---------------------------------------------------------------

    async def _start(self, argv: list[str]) -> None:
        # The answers come on a pipe of its own, read with ``connect_read_pipe``: the
        # subprocess transport's own stdout pipe hands each read to the protocol one
        # turn of the loop later (a ``call_soon``), a turn per answer on the hot path.
        answers, child_stdout = os.pipe()  # not inherited by any other child
        try:
            try:
                await self.loop.subprocess_exec(
                    lambda: self, *argv, stdin=subprocess.PIPE, stdout=child_stdout, stderr=None
                )
            finally:
                os.close(child_stdout)
            pipe = os.fdopen(answers, "rb", buffering=0)
            answers = -1
            await self.loop.connect_read_pipe(lambda: _Answers(self), pipe)
        except Exception as exc:  # no process to be had (a limit): the owner's loss policy
            if answers >= 0:
                os.close(answers)
            self.start_error = exc
            self.kill()
            self.exited = self.answered = True
            self._end()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        assert self.transport is not None
        self.pid = self.transport.get_pid()
        stdin = self.transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        self.stdin = stdin
        try:
            pipe = stdin.get_extra_info("pipe")
            fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        except (OSError, AttributeError):
            pass  # the system's limit is lower: the default pipe works, with more waits
        early, self.early = self.early, []
        for data in early:
            stdin.write(data)
        if self.closing:
            stdin.close()

    # -- frames to the child -----------------------------------------------------

    def send(self, obj: Any) -> bool:
        """Queue one frame; False once the child is gone (the frame is dropped)."""
        return self.send_frame(frame(obj))

    def send_frame(self, data: bytes) -> bool:
        """``send`` for a frame made already (``utils/frames.frame``)."""
        if self.ended or self.closing:
            return False
        self.sent += len(data)
        if self.stdin is None:
            self.early.append(data)
        else:
            self.stdin.write(data)
        self._watch()
        return True

    @property
    def backlog(self) -> int:
        """Bytes sent that wait in memory for room in the pipe."""
        if self.stdin is None:
            return sum(map(len, self.early))
        return self.stdin.get_write_buffer_size()

    def close(self) -> None:
        """No more frames: EOF once the backlog is in the pipe, and the child finishes
        and exits. The watchdog then waits for its end."""
        if self.closing or self.ended:
            return
        self.closing = True
        if self.stdin is not None:
            self.stdin.close()
        self._watch()

    def kill(self) -> None:
        """SIGKILL (a stopped child too); ``ended`` follows once it is reaped."""
        if self.transport is not None and self.returncode is None:
            try:
                self.transport.kill()
            except (ProcessLookupError, OSError):
                pass

    async def reap(self, timeout: float | None = None) -> None:
        """Close, and wait for the end: killed if it answers nothing for ``timeout`` s."""
        if timeout is not None and (self.stall_timeout is None or timeout < self.stall_timeout):
            self.stall_timeout, self.stall_setting = timeout, ""
            self._rearm()
        self.close()
        await asyncio.shield(self.done)

    # -- the watchdog --------------------------------------------------------------

    def _waiting(self) -> bool:
        return not self.ended and (self.closing or self.owed())

    def _watch(self) -> None:
        """After a frame the child owes an answer for (the owner counts it as owed
        before it sends it), or after ``close``."""
        if self.stall_timeout is None or not self._waiting():
            return
        if self.idle:
            self.idle = False
            self.since = time.monotonic()
        if self.timer is None:
            self.timer = self.loop.call_later(self.stall_timeout, self._check)

    def _rearm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self._waiting():
            self._watch()

    def _check(self) -> None:
        """Kill a child that has answered nothing for ``stall_timeout`` s while it owes."""
        self.timer = None
        if not self._waiting() or self.stall_timeout is None:
            self.idle = True
            return
        left = self.since + self.stall_timeout - time.monotonic()
        if left > 0:
            self.timer = self.loop.call_later(left, self._check)
            return
        self.stalled = True
        self.kill()

    # -- the child's answers and end ---------------------------------------------

    def answer_data(self, data: bytes) -> None:
        self.frames.feed(data)
        found = self.frames.take(sys.maxsize)
        if not found:
            return
        self.since = time.monotonic()
        answers = []
        for one in found:
            if isinstance(one, dict):
                self.summary = one
            else:
                answers.append(one)
        if answers and not self.ended:
            self.on_answers(answers)
        if not self._waiting():
            self.idle = True

    def process_exited(self) -> None:
        assert self.transport is not None
        self.returncode = self.transport.get_returncode()

    def connection_lost(self, exc: Exception | None) -> None:
        """Its stdin closed and the child reaped."""
        if self.transport is not None:
            self.returncode = self.transport.get_returncode()
            self.transport.close()
        self.exited = True
        self._end()

    def answers_ended(self) -> None:
        """Its stdout closed: every answer is in."""
        self.answered = True
        self._end()

    def _end(self) -> None:
        if self.ended or not (self.exited and self.answered):
            return
        self.ended = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.early.clear()
        self.on_ended()
        if not self.done.done():
            self.done.set_result(None)

    @property
    def alive(self) -> bool:
        """The child has not ended (it may be finishing after ``close``)."""
        return not self.ended

    @property
    def how(self) -> str:
        """How it ended: ``ended (killed by SIGKILL)``, ``answered nothing for 60 s
        (TRAVERSE_SNAPSHOT_STALL_TIMEOUT) and was stopped``, ``did not start (...)``."""
        if self.start_error is not None:
            return f"did not start ({self.start_error})"
        if self.stalled:
            named = f" ({self.stall_setting})" if self.stall_setting else ""
            return f"answered nothing for {self.stall_timeout:g} s{named} and was stopped"
        return f"ended ({exit_description(self.returncode)})"


class _Answers(asyncio.Protocol):
    """The child's stdout, read by the loop's pipe transport."""

    def __init__(self, child: ChildProcess) -> None:
        self.child = child

    def data_received(self, data: bytes) -> None:
        self.child.answer_data(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.child.answers_ended()
