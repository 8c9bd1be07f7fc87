"""The crawl's end of the extraction process (``extraction/process_child.py``).

``ExtractionProcess.extract`` sends a page and returns a future, set in order when
the child's answer comes in on the crawl's event loop: ``(lines, items, warnings)``;
``OVERDUE`` for the page the child was killed on (below); or ``None`` when the child
did not extract the page (its extraction raised, or the child is gone). Its policy on
loss: the caller then extracts the page itself, so a lost child costs speed, never an
item.

The child extracts pages in the order they were sent, so the page it works on is the
oldest unanswered one. ``TRAVERSE_EXTRACT_TIMEOUT`` is checked inside the extraction
(between fields, and by the ``regex`` module), which a single lxml call (an XPath
quadratic in a large page's nodes) cannot see; here it is a hard bound, the child's
stall watchdog (``utils/child_process.py``): a page unanswered for ``overdue_after``
seconds since the child began it gets the child killed, ``OVERDUE`` for that page, and
``on_overdue`` is called so that the caller can start another child for the pages
after it.

``ExtractionPool`` is the same children and bound for a command with no event loop of
its own (``scrapy extract``, ``--verify``): pages in, answers out in order, a page past
the bound answered with the timeout warning and no items.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from traverse_crawl.extraction.extractor import (
    MAX_ITEM_BYTES_PER_PAGE,
    Extractor,
    encode_items,
    timeout_warning,
)
from traverse_crawl.extraction.process_child import Answer
from traverse_crawl.extraction.rules import Rules
from traverse_crawl.utils.child_process import ChildProcess

logger = logging.getLogger("traverse_crawl.extraction")

OVERDUE: Final = "overdue"
# A page's fields: (body, final URL, page URL, page id, sourceRef, seed URL).
PageJob = tuple[str, str, str | None, str | None, str | None, str | None]


def overdue_after(timeout: float) -> float:
    """The hard bound on one page: after ``TRAVERSE_EXTRACT_TIMEOUT``, which the
    extraction checks itself, with room for it to do so (half of it, at least 1 s)."""
    return timeout + max(1.0, timeout / 2)


class ExtractionProcess:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        rules: Rules,
        max_items: int,
        timeout: float,
        overdue_after: float,
        on_overdue: Callable[[], None],
        items: bool = True,
        max_item_bytes: int = MAX_ITEM_BYTES_PER_PAGE,
    ) -> None:
        self.waiting: collections.deque[asyncio.Future[Answer | str | None]] = collections.deque()
        self.asked = 0
        self.closing = False
        self.on_overdue = on_overdue
        self.event_loop = loop
        config: dict[str, Any] = {"raw": rules.raw, "source": rules.source,
                                  "max_items": max_items, "timeout": timeout,
                                  "max_item_bytes": max_item_bytes}  # fmt: skip
        if not items:
            config["items"] = False
        # If it cannot start, it ends at once: the caller extracts in the crawl.
        self.child = ChildProcess(
            loop, "traverse_crawl.extraction.process_child", config, self._answers,
            self._ended, owed=lambda: bool(self.waiting), stall_timeout=overdue_after,
        )  # fmt: skip

    @property
    def alive(self) -> bool:
        return self.child.alive

    @property
    def overdue(self) -> bool:
        """Killed for a page past the hard bound."""
        return self.child.stalled

    @property
    def lost(self) -> bool:
        """The child ended before the crawl let it go (killed, out of memory, or never
        started), and not for a page past the hard bound."""
        return self.child.ended and not self.closing and not self.overdue

    def extract(
        self,
        body: str,
        final_url: str,
        page_url: str | None,
        page_id: str | None,
        source_ref: str | None,
        seed_url: str | None,
    ) -> asyncio.Future[Answer | str | None]:
        future: asyncio.Future[Answer | str | None] = self.event_loop.create_future()
        if self.child.ended or self.closing:
            future.set_result(None)
            return future
        self.waiting.append(future)
        self.asked += 1
        self.child.send((body, final_url, page_url, page_id, source_ref, seed_url))
        return future

    def close(self) -> None:
        """EOF to the child, which exits once it has answered what it was sent."""
        self.closing = True
        self.child.close()
        self._release()

    async def reap(self, timeout: float = 5.0) -> float | None:
        """Close, and wait for the child's exit (killed after ``timeout`` s); its CPU
        seconds, if it said."""
        self.close()
        await self.child.reap(timeout)
        cpu = self.child.summary.get("cpu_s")
        return float(cpu) if cpu is not None else None

    def _answers(self, answers: list[Any]) -> None:
        for found in answers:
            if not self.waiting:
                return  # closed: its answers are not waited for
            future = self.waiting.popleft()
            if not future.done():
                future.set_result(found)

    def _ended(self) -> None:
        self._release()
        if self.overdue and not self.closing:
            self.on_overdue()

    def _release(self) -> None:
        """No more answers: the page the child was killed on is ``OVERDUE``, every other
        page still waiting is the caller's to extract."""
        waiting, self.waiting = self.waiting, collections.deque()
        for position, future in enumerate(waiting):
            if not future.done():
                future.set_result(OVERDUE if self.overdue and position == 0 else None)


class ExtractionPool:
    """Pages extracted in ``workers`` extraction processes with the crawl's hard bound
    (``overdue_after``), for a command without an event loop: ``extract(jobs)`` gives
    each job's ``(lines, items, warnings)``, in order. A page past the bound has no
    items and the timeout warning; the child is killed and another takes the pages
    after it. A page a child did not answer (its extraction raised, or no child could
    be had) is extracted in this process, as the crawl does. ``items=False``: only the
    lines and warnings come back."""

    def __init__(
        self,
        rules: Rules,
        max_items: int,
        timeout: float,
        workers: int = 1,
        items: bool = True,
        max_item_bytes: int = MAX_ITEM_BYTES_PER_PAGE,
    ) -> None:
        self.rules = rules
        self.max_items = max_items
        self.max_item_bytes = max_item_bytes
        self.timeout = timeout
        self.items = items
        # Its own event loop, in a thread of its own: the caller may be inside a loop.
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="traverse-extract-pool", daemon=True
        )
        self.thread.start()
        self.children: list[ExtractionProcess | None] = [None] * max(1, workers)
        self.retired: list[ExtractionProcess] = []
        self.overdue = 0  # pages past the hard bound
        self.no_process = not rules.raw  # rules given as data: no child can compile them
        self._here: Extractor | None = None

    def extract(self, jobs: list[PageJob]) -> list[Answer]:
        slots = len(self.children)
        found = asyncio.run_coroutine_threadsafe(self._all(jobs, slots), self.loop).result()
        return [
            self._in_this_process(job) if answer is None else answer
            for job, answer in zip(jobs, found, strict=True)
        ]

    def close(self) -> None:
        """Let the children go, and reap them."""
        if self.loop.is_closed():
            return
        asyncio.run_coroutine_threadsafe(self._close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()
        self.children = [None] * len(self.children)
        self.retired.clear()

    async def _close(self) -> None:
        children = [child for child in [*self.retired, *self.children] if child is not None]
        await asyncio.gather(*(child.reap(timeout=1.0) for child in children))

    async def _all(self, jobs: list[PageJob], slots: int) -> list[Answer | None]:
        tasks = [self._one(position % slots, job) for position, job in enumerate(jobs)]
        return list(await asyncio.gather(*tasks))

    async def _one(self, slot: int, job: PageJob) -> Answer | None:
        for _attempt in range(3):
            child = self._child(slot)
            if child is None:
                return None
            found = await child.extract(*job)
            if found == OVERDUE:
                self.overdue += 1
                return b"", [], [timeout_warning(self.timeout)]
            if isinstance(found, tuple):
                return found
            if child.child.start_error is not None:
                self._no_process(child.child.start_error)
                return None
            if child.alive:
                return None  # its extraction raised there: this process reports what it is
            # Killed for another page past the bound, or lost: the next child takes it.
        return None

    def _child(self, slot: int) -> ExtractionProcess | None:
        child = self.children[slot]
        if child is not None and child.alive:
            return child
        if self.no_process:
            return None
        if child is not None:
            self.retired.append(child)
        child = ExtractionProcess(
            self.loop, self.rules, self.max_items, self.timeout,
            overdue_after=overdue_after(self.timeout), on_overdue=lambda: None,
            items=self.items, max_item_bytes=self.max_item_bytes,
        )  # fmt: skip
        self.children[slot] = child
        return child

    def _no_process(self, error: BaseException) -> None:
        if self.no_process:
            return
        self.no_process = True
        logger.warning(
            "no extraction process could be started (%s); pages are extracted here, "
            "without the hard bound on a page", error,
        )  # fmt: skip

    def _in_this_process(self, job: PageJob) -> Answer:
        if self._here is None:
            self._here = Extractor(self.rules, self.max_items, self.timeout, self.max_item_bytes)
        body, final_url, page_url, page_id, source_ref, seed_url = job
        extraction = self._here.extract(
            body, final_url, page_url=page_url, page_id=page_id, source_ref=source_ref,
            seed_url=seed_url,
        )  # fmt: skip
        found = [dict(item) for item in extraction.items] if self.items else []
        return encode_items(extraction), found, extraction.warnings
