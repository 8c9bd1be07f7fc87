"""The crawl's side of the snapshot writer process (``snapshots/writer_child.py``).

``SnapshotWriter`` starts the child (``utils/child_process.py``), hands it each file as
a ``(path, snapshot)`` frame and reads its answers without blocking the crawl's event
loop; what the pipe has no room for waits in memory, bounded by the items Scrapy keeps
in flight. Its policy on loss: if the child ends before answering (or never started),
every file it had not answered fails with ``WriterLost``: never a hang. A child that
stops answering while files wait (stopped, or stuck in a write that never returns) for
``stall_timeout`` seconds (``TRAVERSE_SNAPSHOT_STALL_TIMEOUT``) is killed, so its files
fail the same way and a graceful stop cannot wait for it for ever.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from traverse_crawl.snapshots.writer_child import Failure
from traverse_crawl.utils.child_process import ChildProcess

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


class SnapshotWriter:
    """After each batch, ``deliver(results)`` is called on the loop with one
    ``(token, error)`` per file, in submission order (error None: durable)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        deliver: Callable[[Delivered], None],
        use_syncfs: bool = True,
        bucket: dict[str, Any] | None = None,
        stall_timeout: float = 60.0,
    ) -> None:
        self.deliver = deliver
        self.tokens: collections.deque[Any] = collections.deque()  # not yet answered
        self.lost: WriterLost | None = None
        self.batches = 0
        self.on_end: list[Callable[[dict[str, Any]], None]] = []
        # No site-packages for a directory: the child needs only the standard library,
        # and starts cheaply. A bucket (``bucket``: where, ``storage/bucket.py``) needs botocore.
        self.child = ChildProcess(
            loop, "traverse_crawl.snapshots.writer_child",
            {"use_syncfs": use_syncfs, "bucket": bucket}, self._answers, self._ended,
            site_packages=bool(bucket), owed=lambda: bool(self.tokens),
            stall_timeout=stall_timeout, stall_setting="TRAVERSE_SNAPSHOT_STALL_TIMEOUT",
        )  # fmt: skip

    @property
    def summary(self) -> dict[str, Any]:
        return self.child.summary

    def submit(self, token: Any, path: str, snapshot: Snapshot) -> None:
        """Queue one file; ``token`` comes back with its result. Raises once the child is gone."""
        if self.lost is not None:
            raise WriterLost(str(self.lost))
        if self.child.closing:
            raise RuntimeError("the snapshot writer is closed")
        self.tokens.append(token)
        self.child.send((path, snapshot))

    def close(self, on_end: Callable[[dict[str, Any]], None]) -> None:
        """Let the child finish what it was given; ``on_end(summary)`` once it has exited."""
        if self.child.ended:
            on_end(self.summary)
            return
        self.on_end.append(on_end)
        self.child.close()  # EOF: the child writes the rest, answers, and exits

    def _answers(self, answers: list[Any]) -> None:
        for answer in answers:
            self.batches += 1
            tokens = [self.tokens.popleft() for _ in answer]
            self.deliver(
                [
                    (token, None if found is None else error(found))
                    for token, found in zip(tokens, answer, strict=True)
                ]
            )

    def _ended(self) -> None:
        """The child has ended: what it had not answered fails."""
        if self.child.stalled or self.child.start_error is not None or not self.summary:
            self.lost = WriterLost(f"the snapshot writer process {self.child.how}")
        pending, self.tokens = list(self.tokens), collections.deque()
        if pending:
            lost = WriterLost(f"{self.lost or 'the snapshot writer process ended'}"
                              " before the file was durable")  # fmt: skip
            self.deliver([(token, lost) for token in pending])
        for on_end in self.on_end:
            on_end(self.summary)
        self.on_end.clear()
