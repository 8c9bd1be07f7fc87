"""The crawl's side of replay's reader process (``replay/reader_child.py``).

``ReplayReader`` asks the child (``utils/child_process.py``) for pages by id; each
``read`` returns a ``Read`` whose ``answer`` is set, in request order, when the child's
frame comes in on the crawl's event loop, and ``ready(read)`` is called for a read
someone waits for. Its policy on loss: if the child ends (or never started), every
unanswered read is marked ``lost`` and the caller reads the store itself: a lost
reader costs speed, never a page.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any

from traverse_crawl.replay.reader_child import Answer, PageWork
from traverse_crawl.utils.child_process import ChildProcess

logger = logging.getLogger(__name__)

REAP_TIMEOUT = 5.0  # a closed reader that has not exited by then is killed


class Read:
    __slots__ = ("answer", "lost", "page_id", "waiting")

    def __init__(self, page_id: str) -> None:
        self.page_id = page_id
        self.answer: Answer | None = None
        self.waiting = False  # the page's request waits for this answer
        self.lost = False  # no answer will come: read the store in the crawl


class ReplayReader:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        root: str,
        max_links: int | None,
        ready: Callable[[Read], None],
        bucket: dict[str, Any] | None = None,
    ) -> None:
        self.ready = ready
        self.reads: collections.deque[Read] = collections.deque()  # asked, not yet answered
        self.asked = 0
        # A recent large answer's size (its text and bytes): the largest, less an eighth
        # for each answer since, so that one large page does not slow the rest for long.
        self.large = 64 * 1024
        self.child = ChildProcess(
            loop, "traverse_crawl.replay.reader_child",
            {"root": root, "max_links": max_links, "bucket": bucket}, self._answers, self._ended,
        )  # fmt: skip

    @property
    def alive(self) -> bool:
        """The reader still answers: it has not ended, nor been closed."""
        return self.child.alive and not self.child.closing

    def read(self, page_id: str, links_wanted: bool = True) -> Read:
        """``links_wanted``: whether the page's links are parsed (``PageWork.links``)."""
        read = Read(page_id)
        if not self.alive:
            read.lost = True
        else:
            self.reads.append(read)
            self.asked += 1
            self.child.send((page_id, links_wanted))
        return read

    def close(self) -> None:
        """EOF to the child, which exits; what it had not answered is lost."""
        self.child.close()
        self._lose()

    async def reap(self) -> float | None:
        """Wait for the closed child's exit (killed after ``REAP_TIMEOUT`` s: stuck in a
        read of a hung file system); its CPU seconds, if it said."""
        await self.child.reap(REAP_TIMEOUT)
        cpu = self.child.summary.get("cpu_s")
        return float(cpu) if cpu is not None else None

    def _answers(self, answers: list[Any]) -> None:
        for found in answers:
            for snapshot, damaged, failed, body, work in found:
                if not self.reads:
                    return  # closed: what it still answers is not waited for
                size = 1
                if snapshot is not None:
                    if body is not None:  # sent once, as bytes (``reader_child.plain``)
                        snapshot["body"] = body.decode("utf-8", "surrogatepass")
                    text, data = snapshot.get("body"), snapshot.get("bodyBytes")
                    size += len(body or b"") + len(text or "") + len(data or b"")
                self.large = max(size, self.large - self.large // 8)
                read = self.reads.popleft()
                read.answer = Answer(
                    snapshot, damaged, failed, body, None if work is None else PageWork(*work)
                )
                if read.waiting:
                    self.ready(read)

    def _ended(self) -> None:
        if self.child.start_error is not None:
            logger.warning(
                "replay: the reader process did not start (%s); reading here",
                self.child.start_error,
            )
        self._lose()

    def _lose(self) -> None:
        """The child has ended, or is let go: every unanswered read is read in the crawl."""
        lost, self.reads = list(self.reads), collections.deque()
        for read in lost:
            read.lost = True
            if read.waiting:
                self.ready(read)
