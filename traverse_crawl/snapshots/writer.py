"""The crawl's side of the snapshot writer process (``snapshots/writer_process.py``).

``SnapshotWriter`` starts the child, hands it each file as a ``(path, snapshot)``
frame and reads its answers without blocking the crawl's event loop (asyncio's
``add_reader``/``add_writer``); what the pipe has no room for waits in memory,
bounded by the items Scrapy keeps in flight. If the child ends before answering,
every file it had not answered fails with ``WriterLost``: never a hang. A child that
stops answering while files wait (stopped, or stuck in a write that never returns) for
``stall_timeout`` seconds (``TRAVERSE_SNAPSHOT_STALL_TIMEOUT``) is killed, so its files
fail the same way and a graceful stop cannot wait for it for ever.
"""

from __future__ import annotations

import collections
import signal
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traverse_crawl.snapshots.writer_process import Failure
from traverse_crawl.utils.framed_pipe import FramedChild, Loop, package_command

if TYPE_CHECKING:
    from traverse_crawl.snapshots.model import Snapshot

Delivered = list[tuple[Any, BaseException | None]]


class WriterLost(Exception):
    """The writer process ended without answering for a file."""


def error(found: Failure) -> BaseException:
    """The child's ``Failure`` as an exception the pipeline can describe."""
    errno, strerror, filename, message = found
    if strerror:
        return OSError(errno, strerror, filename)  # FileExistsError etc. by errno
    return RuntimeError(message)


class SnapshotWriter(FramedChild):
    """After each batch, ``deliver(results)`` is called on the loop with one
    ``(token, error)`` per file, in submission order (error None: durable)."""

    def __init__(
        self,
        loop: Loop,
        deliver: Callable[[Delivered], None],
        use_syncfs: bool = True,
        bucket: dict[str, Any] | None = None,
        stall_timeout: float = 60.0,
    ) -> None:
        # No site-packages for a directory: the child needs only the standard library,
        # and starts cheaply. A bucket (``bucket``: where, ``storage/bucket.py``) needs botocore.
        command = package_command("traverse_crawl.snapshots.writer_process", bool(bucket))
        super().__init__(loop, command)
        self.deliver = deliver
        self.tokens: collections.deque[Any] = collections.deque()  # not yet answered
        self.closing = False
        self.lost: WriterLost | None = None
        self.batches = 0
        self.summary: dict[str, Any] = {}
        self.on_end: list[Callable[[dict[str, Any]], None]] = []
        self.stall_timeout = stall_timeout
        self.last_answer = time.monotonic()  # or the first file after an idle spell
        self.watch: Any = None  # the loop's timer while files wait for an answer
        self.stalled = False
        self._send({"use_syncfs": use_syncfs, "bucket": bucket})

    def submit(self, token: Any, path: str, snapshot: Snapshot) -> None:
        """Queue one file; ``token`` comes back with its result. Raises once the child is gone."""
        if self.lost is not None:
            raise WriterLost(str(self.lost))
        if self.closing:
            raise RuntimeError("the snapshot writer is closed")
        if not self.tokens:
            self.last_answer = time.monotonic()
        self.tokens.append(token)
        self._send((path, snapshot))
        if self.watch is None:
            self.watch = self.loop.call_later(self.stall_timeout, self._check_stall)

    def _check_stall(self) -> None:
        """Kill a child that has not answered for ``stall_timeout`` s while files wait."""
        self.watch = None
        if self.ended or not self.tokens:
            return
        waited = time.monotonic() - self.last_answer
        if waited < self.stall_timeout:
            self.watch = self.loop.call_later(self.stall_timeout - waited, self._check_stall)
            return
        self.stalled = True
        self.proc.kill()  # its stdout's EOF then fails every file it had not answered

    def close(self, on_end: Callable[[dict[str, Any]], None]) -> None:
        """Let the child finish what it was given; ``on_end(summary)`` once it has exited."""
        self.closing = True
        if self.ended:
            on_end(self.summary)
            return
        self.on_end.append(on_end)
        self._flush()

    def _flush(self) -> None:
        super()._flush()
        if self.closing and not self.backlog:
            self._close_stdin()  # EOF: the child writes the rest, answers, and exits

    def _close_stdin(self) -> None:
        assert self.proc.stdin is not None
        if not self.proc.stdin.closed:
            self.proc.stdin.close()

    def _readable(self) -> None:
        for answer in self._frames():
            if isinstance(answer, dict):
                self.summary = answer
                continue
            self.batches += 1
            self.last_answer = time.monotonic()
            tokens = [self.tokens.popleft() for _ in answer]
            self.deliver(
                [
                    (token, None if found is None else error(found))
                    for token, found in zip(tokens, answer, strict=True)
                ]
            )
        if self.answers.eof:
            self._end()

    def _end(self) -> None:
        """The child closed its stdout: it has exited (or is exiting)."""
        self._stop_watching()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        code = self.proc.wait()
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        if self.stalled:
            self.lost = WriterLost(
                f"the snapshot writer process answered nothing for {self.stall_timeout:g} s "
                "(TRAVERSE_SNAPSHOT_STALL_TIMEOUT) and was stopped"
            )
        elif not self.summary:
            how = f"killed by {_signal_name(-code)}" if code < 0 else f"exit code {code}"
            self.lost = WriterLost(f"the snapshot writer process ended ({how})")
        pending, self.tokens = list(self.tokens), collections.deque()
        if pending:
            lost = WriterLost(f"{self.lost or 'the snapshot writer process ended'}"
                              " before the file was durable")  # fmt: skip
            self.deliver([(token, lost) for token in pending])
        for on_end in self.on_end:
            on_end(self.summary)
        self.on_end.clear()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
