"""The crawl's end of the extraction process (``extraction/process_main.py``).

``ExtractionProcess.extract`` sends a page and returns a future, set in order when
the child's answer comes in on the crawl's event loop: ``(lines, items, warnings)``;
``OVERDUE`` for the page the child was killed on (below); or ``None`` when the child
did not extract the page (its extraction raised, or the child is gone). The caller then
extracts the page itself, so a lost child costs speed, never an item.

The child extracts pages in the order they were sent, so the page it works on is the
oldest unanswered one. ``TRAVERSE_EXTRACT_TIMEOUT`` is checked inside the extraction
(between fields, and by the ``regex`` module), which a single lxml call (an XPath
quadratic in a large page's nodes) cannot see; here it is a hard bound: a page
unanswered for ``overdue_after`` seconds since the child began it gets the child
killed, ``OVERDUE`` for that page, and ``on_overdue`` is called so that the caller can
start another child for the pages after it.
"""

from __future__ import annotations

import asyncio
import collections
import os
import signal
import time
from collections.abc import Callable
from typing import Final

from traverse_crawl.extraction.process_main import Answer
from traverse_crawl.extraction.rules import Rules
from traverse_crawl.utils.framed_pipe import FramedChild, package_command

OVERDUE: Final = "overdue"


class ExtractionProcess(FramedChild):
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        rules: Rules,
        max_items: int,
        timeout: float,
        overdue_after: float,
        on_overdue: Callable[[], None],
    ) -> None:
        # OSError if it cannot start: the caller extracts in the crawl.
        super().__init__(loop, package_command("traverse_crawl.extraction.process_main", True))
        self.waiting: collections.deque[asyncio.Future[Answer | str | None]] = collections.deque()
        self.asked = 0
        self.closing = False
        self.overdue = False  # killed for a page past the hard bound
        self.overdue_after = overdue_after
        self.on_overdue = on_overdue
        self.head_since = 0.0  # when the child began the oldest unanswered page
        self.watch: asyncio.TimerHandle | None = None
        self.event_loop = loop
        self._send(
            {"raw": rules.raw, "source": rules.source, "max_items": max_items, "timeout": timeout}
        )

    @property
    def lost(self) -> bool:
        """The child ended before the crawl let it go (killed, or out of memory), and not
        for a page past the hard bound."""
        return self.ended and not self.closing and not self.overdue

    def extract(
        self,
        body: str,
        final_url: str,
        page_url: str,
        page_id: str,
        source_ref: str,
        seed_url: str,
    ) -> asyncio.Future[Answer | str | None]:
        future: asyncio.Future[Answer | str | None] = self.event_loop.create_future()
        if self.ended:
            future.set_result(None)
            return future
        if not self.waiting:
            self._began()
        self.waiting.append(future)
        self.asked += 1
        self._send((body, final_url, page_url, page_id, source_ref, seed_url))
        return future

    def close(self) -> None:
        """EOF to the child, which exits once it has answered what it was sent."""
        self.closing = True
        if not self.ended:
            self._stop_watching()
            self._release()

    def _began(self) -> None:
        self.head_since = time.monotonic()
        if self.watch is None:  # else it looks again when it is due (``_check``)
            self.watch = self.event_loop.call_later(self.overdue_after, self._check)

    def _check(self) -> None:
        self.watch = None
        if self.ended or not self.waiting:
            return
        left = self.head_since + self.overdue_after - time.monotonic()
        if left > 0:
            self.watch = self.event_loop.call_later(left, self._check)
            return
        self.overdue = True
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._stop_watching()
        self._release()
        self.on_overdue()

    def _readable(self) -> None:
        for found in self._frames():
            future = self.waiting.popleft()
            if not future.done():
                future.set_result(found)
            if self.waiting:
                self._began()  # the child goes on to the next page
        if self.answers.eof:
            self._stop_watching()
            self._release()

    def _release(self) -> None:
        """No more answers: the page the child was killed on is ``OVERDUE``, every other
        page still waiting is the caller's to extract."""
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None
        assert self.proc.stdout is not None
        if not self.proc.stdout.closed:
            self.proc.stdout.close()
        waiting, self.waiting = self.waiting, collections.deque()
        for position, future in enumerate(waiting):
            if not future.done():
                future.set_result(OVERDUE if self.overdue and position == 0 else None)
