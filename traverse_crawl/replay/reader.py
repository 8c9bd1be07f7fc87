"""The crawl's side of replay's reader process (``replay/reader_process.py``).

``ReplayReader`` asks the child for pages by id; each ``read`` returns a ``Read``
whose ``answer`` is set, in request order, when the child's frame comes in on the
crawl's event loop, and ``ready(read)`` is called for a read someone waits for. If
the child ends, every unanswered read is marked ``lost`` and the caller reads the
store itself: a lost reader costs speed, never a page.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from traverse_crawl.replay.reader_process import Answer, PageWork
from traverse_crawl.utils.framed_pipe import FramedChild, Loop, package_command


class Read:
    __slots__ = ("answer", "lost", "page_id", "waiting")

    def __init__(self, page_id: str) -> None:
        self.page_id = page_id
        self.answer: Answer | None = None
        self.waiting = False  # the page's request waits for this answer
        self.lost = False  # no answer will come: read the store in the crawl


class ReplayReader(FramedChild):
    def __init__(
        self,
        loop: Loop,
        root: str,
        max_links: int | None,
        ready: Callable[[Read], None],
        bucket: dict[str, Any] | None = None,
    ) -> None:
        # OSError if it cannot start: the caller reads the store itself.
        super().__init__(loop, package_command("traverse_crawl.replay.reader_process", True))
        self.ready = ready
        self.reads: collections.deque[Read] = collections.deque()  # asked, not yet answered
        self.asked = 0
        # A recent large answer's size (its text and bytes): the largest, less an eighth
        # for each answer since, so that one large page does not slow the rest for long.
        self.large = 64 * 1024
        self._send({"root": root, "max_links": max_links, "bucket": bucket})

    def read(self, page_id: str, links_wanted: bool = True) -> Read:
        """``links_wanted``: whether the page's links are parsed (``PageWork.links``)."""
        read = Read(page_id)
        if self.ended:
            read.lost = True
        else:
            self.reads.append(read)
            self.asked += 1
            self._send((page_id, links_wanted))
        return read

    def close(self) -> None:
        """EOF to the child, which exits; what it had not answered is lost."""
        if not self.ended:
            self._end(wait=False)

    def _readable(self) -> None:
        for found in self._frames():
            for snapshot, damaged, failed, body, work in found:
                size = 1
                if snapshot is not None:
                    if body is not None:  # sent once, as bytes (``reader_process.plain``)
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
        if self.answers.eof:
            self._end(wait=True)

    def _end(self, wait: bool) -> None:
        self._stop_watching()  # its stdin closed: EOF, the child exits
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        if wait:
            self.proc.wait()
        lost, self.reads = list(self.reads), collections.deque()
        for read in lost:
            read.lost = True
            if read.waiting:
                self.ready(read)
