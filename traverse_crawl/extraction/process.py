"""The crawl's end of the extraction process (``extraction/process_main.py``).

``ExtractionProcess.extract`` sends a page and returns a future, set in order when
the child's answer comes in on the crawl's event loop: ``(lines, items, warnings)``,
or ``None`` when the child did not extract the page (its extraction raised, or the
child is gone). The caller then extracts the page itself, so a lost child costs speed,
never an item.
"""

from __future__ import annotations

import asyncio
import collections

from traverse_crawl.extraction.process_main import Answer
from traverse_crawl.extraction.rules import Rules
from traverse_crawl.utils.framed_pipe import FramedChild, package_command


class ExtractionProcess(FramedChild):
    def __init__(
        self, loop: asyncio.AbstractEventLoop, rules: Rules, max_items: int, timeout: float
    ) -> None:
        # OSError if it cannot start: the caller extracts in the crawl.
        super().__init__(loop, package_command("traverse_crawl.extraction.process_main", True))
        self.waiting: collections.deque[asyncio.Future[Answer | None]] = collections.deque()
        self.asked = 0
        self.closing = False
        self.create_future = loop.create_future
        self._send(
            {"raw": rules.raw, "source": rules.source, "max_items": max_items, "timeout": timeout}
        )

    @property
    def alive(self) -> bool:
        return not self.ended

    @property
    def lost(self) -> bool:
        """The child ended before the crawl let it go (killed, or out of memory)."""
        return self.ended and not self.closing

    def extract(
        self,
        body: str,
        final_url: str,
        page_url: str,
        page_id: str,
        source_ref: str,
        seed_url: str,
    ) -> asyncio.Future[Answer | None]:
        future: asyncio.Future[Answer | None] = self.create_future()
        if self.ended:
            future.set_result(None)
            return future
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

    def _readable(self) -> None:
        for found in self._frames():
            future = self.waiting.popleft()
            if not future.done():
                future.set_result(found)
        if self.answers.eof:
            self._stop_watching()
            self._release()

    def _release(self) -> None:
        """No more answers: every page still waiting is the caller's to extract."""
        assert self.proc.stdout is not None
        if not self.proc.stdout.closed:
            self.proc.stdout.close()
        waiting, self.waiting = self.waiting, collections.deque()
        for future in waiting:
            if not future.done():
                future.set_result(None)
