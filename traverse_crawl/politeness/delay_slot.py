"""The download slot of one origin in a single-process crawl.

``DelaySlot`` lets one request at a time through while its delay is > 0, and
starts the next at least the delay after the previous one *ended* (Scrapy's own
slot delay counts from the previous *start*); a retry goes to the head of the
queue and waits its backoff instead of the delay. Its ``pace`` (politeness/backoff.py)
adds the origin's back-off and ``TRAVERSE_DELAY_FACTOR``'s pace to the delay, one request
at a time while it counts. A distributed crawl's ``LedgerSlot`` builds on it.
"""

from __future__ import annotations

from collections import deque
from time import monotonic
from typing import Any

from scrapy import Request
from scrapy.core.downloader import Slot

from traverse_crawl.meta_keys import NOT_BEFORE
from traverse_crawl.politeness.backoff import OriginPace

_EPSILON = 1e-6
# A slowed origin's delay while its back-off and pace are still 0: long enough for
# the request just dispatched to enter ``transferring`` (a task, started on the
# loop's next turn), so no second one goes before it ends.
_ONE_AT_A_TIME = 1e-3


class EndStamps(set[Request]):
    """The slot's ``transferring`` set: records when the last download ended.

    Scrapy's downloader removes a request from ``transferring`` and then looks
    at its queue, before any signal fires; this is the one place that sees the
    end of every download in time.
    """

    def __init__(self, slot: DelaySlot) -> None:
        super().__init__()
        self.slot = slot

    def remove(self, request: Request) -> None:
        super().remove(request)
        slot = self.slot
        slot.last_end = monotonic()
        # The wait set while the request was in flight assumed the delay of then; a
        # response may have changed it (a back-off halved), and the downloader looks
        # at the queue again right after this: it waits the delay from this end.
        if slot.latercall is not None and slot.pace is not None:
            slot.latercall.cancel()
            slot.latercall = None


class RetriesFirst(deque[tuple[Request, Any]]):
    """The slot's queue: a retry goes to the head, as in Traverse's sequential
    loop, where a page's retries come before any other request to its origin."""

    def __init__(self, slot: DelaySlot) -> None:
        super().__init__()
        self.slot = slot

    def append(self, item: tuple[Request, Any]) -> None:
        if item[0].meta.get(NOT_BEFORE) is None:
            super().append(item)
            return
        self.appendleft(item)
        # A wait computed for the previous head no longer applies; the
        # downloader re-evaluates the queue right after this append.
        if self.slot.latercall is not None:
            self.slot.latercall.cancel()
            self.slot.latercall = None


class DelaySlot(Slot):
    """A download slot whose delay runs from the end of the previous request,
    and whose retries wait their backoff instead of the delay."""

    # The origin's block pages in a row as the crawl's ledger last said (a Redis crawl's
    # ``LedgerSlot`` keeps it; 0 here).
    blocked_run = 0

    def __init__(self, concurrency: int, delay: float, pace: OriginPace | None = None) -> None:
        super().__init__(concurrency, delay, jitter=0.0)
        self.pace = pace
        self.transferring = EndStamps(self)
        self.queue = RetriesFirst(self)
        # None until a download ends. Not 0.0: the downloader compares these
        # stamps with time.monotonic(), whose zero is the machine's boot, so a
        # 0.0 would delay the first request of a freshly booted container.
        self.last_end: float | None = None

    def current_delay(self) -> float:
        """The origin's delay now: the base, or its back-off or pace when longer."""
        return self.delay if self.pace is None else self.pace.delay(self.delay)

    def free_transfer_slots(self) -> int:
        if self.pace is not None and self.pace.slowed:
            return min(1, self.concurrency) - len(self.transferring)
        return super().free_transfer_slots()

    def download_delay(self) -> float:
        # The downloader waits ``returned - now + lastseen`` before it dispatches
        # the queue's head, and sets ``lastseen`` at each dispatch. A positive
        # value also makes it dispatch one request per call.
        delay = self.current_delay()
        if not delay and self.pace is not None and self.pace.slowed:
            delay = _ONE_AT_A_TIME
        not_before: float | None = None
        if self.queue:
            not_before = self.queue[0][0].meta.get(NOT_BEFORE)
        if not delay:
            return 0.0 if not_before is None else max(_EPSILON, not_before - self.lastseen)
        if self.last_end is None:
            # The origin's first request goes at once (the downloader waits
            # ``_EPSILON - now + 0``); once it is dispatched (``lastseen`` set),
            # the next one waits for its end.
            return delay if self.lastseen else _EPSILON
        if self.lastseen > self.last_end:
            # A request was dispatched since the last one ended: it is in flight
            # (it enters ``transferring`` a loop iteration later). Wait for its end.
            return delay
        if not_before is not None:
            return max(_EPSILON, not_before - self.lastseen)  # a retry: backoff, not delay
        return max(_EPSILON, delay + self.last_end - self.lastseen)
