"""The crawl's end of the WARC writer process (``warc/writer_child.py``).

Jobs go down the child's stdin (``utils/child_process.py``) without ever blocking the
crawl's event loop; ``backlog`` says how much waits in memory, so the crawl can pause
while the writer is behind. The child answers how many jobs it has written, its
failures as they happen and, at the end, its summary. A writer that answers nothing
for ``stall_timeout`` seconds (``TRAVERSE_WARC_STALL_TIMEOUT``) while jobs wait, or
while it finishes after ``close``, is killed, so a stop always ends. Its policy on loss
is the extension's (``warc/extension.py``): ``gone`` is called once for a writer that
dies or stalls before ``close``, and a new one takes the jobs this one never got a
byte of (``unsent``).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Any

from traverse_crawl.utils.child_process import ChildProcess
from traverse_crawl.warc.writer_child import Summary


class WarcWriter:
    """One writer process. ``notice(text)`` for each failure it reports while it
    runs; ``gone(reason)`` once if it dies or stalls before ``close``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        config: dict[str, Any],
        stall_timeout: float,
        notice: Callable[[str], None],
        gone: Callable[[str], None],
    ) -> None:
        self.notice, self.gone = notice, gone
        self.jobs_sent = 0
        self.written = 0  # jobs the child says it has written
        # The jobs not known to be in the pipe whole: (where each ends in the bytes
        # sent, its frame), so that a new writer can take the ones this one never got.
        self.unplaced: collections.deque[tuple[int, bytes]] = collections.deque()
        self.placed = 0  # bytes the pipe had taken, when last looked at
        self.failed = ""  # why it is gone (died or stalled), once it is
        self.closing: asyncio.Future[Summary] | None = None
        self.child = ChildProcess(
            loop, "traverse_crawl.warc.writer_child", config, self._answers, self._ended,
            owed=lambda: self.written < self.jobs_sent, stall_timeout=stall_timeout,
            stall_setting="TRAVERSE_WARC_STALL_TIMEOUT",
        )  # fmt: skip

    @property
    def backlog(self) -> int:
        """Bytes of jobs waiting in memory for room in the pipe."""
        return self.child.backlog

    @property
    def summary(self) -> Summary | None:
        found = self.child.summary
        try:
            return Summary(**found) if found else None
        except TypeError:
            return None

    def send(self, data: bytes) -> bool:
        """Queue one framed job (``writer_child.job_frame``); False once the writer is
        gone or closing (the job is not kept)."""
        if self.failed or not self.child.alive or self.child.closing:
            return False
        self.jobs_sent += 1  # owed before it is sent: the stall watchdog counts it
        self.child.send_frame(data)
        self.unplaced.append((self.child.sent, data))
        self._place()
        return True

    def _place(self) -> None:
        """Forget the jobs the pipe has taken whole: only the others can go to a new
        writer. Looked at on each job and each answer: once the child is gone, its pipe
        transport no longer says what it had taken."""
        if self.child.ended:
            return
        self.placed = self.child.sent - self.child.backlog
        while self.unplaced and self.unplaced[0][0] <= self.placed:
            self.unplaced.popleft()

    def unsent(self) -> tuple[list[bytes], int]:
        """The jobs the child never got a byte of (another writer can take them), and how
        many it got only part of (lost)."""
        if not self.unplaced:
            return [], 0
        end, data = self.unplaced[0]
        partly = int(end - len(data) < self.placed)
        return [job for _, job in self.unplaced][partly:], partly

    def _answers(self, answers: list[Any]) -> None:
        for answer in answers:
            if isinstance(answer, int):
                self.written += answer
            elif isinstance(answer, str):
                self.notice(answer)
        self._place()

    def _ended(self) -> None:
        if self.summary is not None and not self.child.stalled:
            return
        self.failed = self.child.how
        if self.closing is None:
            self.gone(self.failed)

    async def close(self) -> Summary:
        """Hand the child what waits, close its stdin and wait for its summary, while
        it answers (``stall_timeout``)."""
        if self.closing is None:
            self.closing = asyncio.ensure_future(self._close())
        return await asyncio.shield(self.closing)

    async def _close(self) -> Summary:
        await self.child.reap()
        summary = self.summary
        if summary is not None and not self.failed:
            return summary
        return Summary(failures=1, error=f"the WARC writer process {self.failed or 'ended'}")
