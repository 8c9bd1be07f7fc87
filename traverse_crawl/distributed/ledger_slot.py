"""An origin's download slot that asks the crawl's Redis ledger before each send.

In a distributed crawl (``REDIS_URL`` set) the politeness middleware gives each
origin this slot instead of ``DelaySlot``. The slot's queue is the same (retries
first), but the ledger (``distributed/ledger.py``) decides when its head may go.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from time import monotonic
from typing import TYPE_CHECKING, Any

from scrapy import Request

from traverse_crawl.meta_keys import NOT_BEFORE
from traverse_crawl.politeness.delay_slot import DelaySlot, EndStamps, RetriesFirst
from traverse_crawl.runtime.stop import CrawlStopped
from traverse_crawl.stats import Stats, inc

if TYPE_CHECKING:
    from scrapy.core.downloader import Downloader

    from traverse_crawl.distributed.ledger import Ledger

logger = logging.getLogger(__name__)

_PARK = 3600.0  # seconds: the downloader's later-call while the ledger decides
_EPSILON = 1e-6


class _LedgerQueue(RetriesFirst):
    def popleft(self) -> tuple[Request, Any]:
        item = super().popleft()
        slot = self.slot
        assert isinstance(slot, LedgerSlot)
        if slot.cleared:
            slot.dispatched += 1
            # One request per grant while the delay is > 0: the downloader
            # dispatches in a loop and sees the transfer start only later.
            slot.cleared = not slot.shared_delay
        return item


class _LedgerEnds(EndStamps):
    def remove(self, request: Request) -> None:
        super().remove(request)
        slot = self.slot
        assert isinstance(slot, LedgerSlot)
        slot.ended()


class LedgerSlot(DelaySlot):
    """A ``DelaySlot`` whose head waits for the ledger.

    - the downloader asks the slot for its delay; while the ledger has not cleared
      the head, the slot starts one ``_ask`` (a coroutine) and answers "park" (an
      hour), so the downloader sets its later-call and waits;
    - ``_ask`` waits out this worker's own pending ledger writes, then asks the
      ledger; told to wait, it sleeps that long (``asyncio.sleep``: the reactor runs
      on) and asks again; cleared, it cancels the later-call and lets the downloader
      dispatch: one request while the origin's delay is > 0 (this worker then holds
      the origin), or as many as the slot takes when it is 0;
    - the end of the download releases the hold (the delay runs from then, on
      Redis's clock) and the slot asks again for its next request;
    - at delay 0 a grant stands for ``ledger.CLEARANCE`` (0.25 s): requests queued
      meanwhile go without asking (``ledger/reused``), retries still ask;
    - the delay that counts is the ledger's (``shared_delay``, from each grant): this
      worker's, or the origin's back-off or pace when longer, one value for all workers.

    Only the head of each origin's queue waits, so the other requests of the origin
    stay in the slot's queue where Scrapy's downloader-aware priority queue sees them,
    and other origins' requests go on. A retry at the head asks as a retry: it waits
    the backoff its worker wrote into the ledger, not the delay. When Redis stays
    unreachable past the client's retries, the queued requests fail as never sent
    (``_take_back``): nothing is sent without the ledger, and the worker's stop is not
    held up by requests that could never go.
    """

    def __init__(
        self,
        concurrency: int,
        delay: float,
        *,
        origin: str,
        ledger: Ledger,
        downloader: Downloader,
        stats: Stats | None,
        cap: float = 0.0,
    ) -> None:
        super().__init__(concurrency, delay)
        self.cap = cap  # TRAVERSE_MAX_DELAY
        self.shared_delay = delay  # the origin's delay at the last grant
        self.blocked_run = 0  # the origin's block pages in a row, as the ledger last said
        # Set by the politeness middleware: the origin is given up (TRAVERSE_BLOCK_STOP_AFTER).
        self.on_gone: Callable[[int], None] | None = None
        self.queue = _LedgerQueue(self)
        self.transferring = _LedgerEnds(self)
        self.origin = origin
        self.ledger = ledger
        self.downloader = downloader
        self.stats = stats
        self.cleared = False  # true only while the downloader dispatches a cleared head
        self.dispatched = 0
        self.holding: str | None = None  # our token while we hold the origin
        self.asking: asyncio.Task[None] | None = None
        self.renewing: asyncio.TimerHandle | None = None

    def download_delay(self) -> float:
        if self.cleared:
            # Positive: the downloader then dispatches one request per call.
            return _EPSILON if self.shared_delay else 0.0
        if not self.queue:
            return 0.0
        if not self.shared_delay and NOT_BEFORE not in self.queue[0][0].meta:
            if self.ledger.clear(self.origin):  # a grant of the last CLEARANCE seconds
                inc(self.stats, "ledger/reused")
                return 0.0
        if self.shared_delay and self.holding is not None:
            return self._park()  # our request is in flight: its end asks again
        if self.asking is None:
            self.asking = asyncio.ensure_future(self._ask())
        return self._park()

    def _park(self) -> float:
        # The downloader waits ``delay - now + lastseen``: park for an hour from now.
        return _PARK + monotonic() - self.lastseen

    async def _ask(self) -> None:
        waited = False
        try:
            while self.queue:
                await self.ledger.settled(self.origin)
                retry = NOT_BEFORE in self.queue[0][0].meta if self.queue else False
                token = self.ledger.token()
                try:
                    grant = await self.ledger.acquire(
                        self.origin, token, self.delay, retry, self.cap
                    )
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the I/O edge: Redis stayed unreachable
                    logger.error("politeness ledger for %s unreachable: %s", self.origin, exc)
                    inc(self.stats, "ledger/errors")
                    self._take_back(f"the politeness ledger in Redis is unreachable ({exc})")
                    return
                self.shared_delay = grant.delay
                self.blocked_run = grant.run
                if self.pace is not None:
                    self.pace.extra = grant.backoff  # as every worker sees it
                if grant.gone and self.on_gone is not None:
                    self.asking = None
                    self.on_gone(grant.gone)  # fails this slot's queue, unsent
                    return
                if grant.expired:
                    inc(self.stats, "ledger/lease_expired")
                    logger.info("took over %s from a worker whose lease expired", self.origin)
                if grant.granted:
                    self.asking = None
                    if waited:
                        inc(self.stats, "ledger/waited")
                    self._dispatch(token)
                    return
                waited = True
                await asyncio.sleep(grant.wait)
        finally:
            if self.asking is asyncio.current_task():
                self.asking = None

    def _take_back(self, reason: str) -> None:
        """Fail the queued requests as never sent (``CrawlStopped``): the pages stay
        in the crawl for a later attempt; without the ledger nothing may be sent."""
        # Unpark: with the later-call left for its hour, the downloader would look
        # at none of the requests queued after these, and the stop would wait on them.
        if self.latercall is not None:
            self.latercall.cancel()
            self.latercall = None
        while self.queue:
            request, deferred = self.queue.popleft()
            deferred.errback(CrawlStopped(f"{request.url} not sent: {reason}"))
            inc(self.stats, "ledger/unsent")

    def _dispatch(self, token: str) -> None:
        if self.latercall is not None:
            self.latercall.cancel()
            self.latercall = None
        if self.shared_delay:
            self.holding = token
            self._renew_later()
        self.cleared = True
        self.dispatched = 0
        try:
            # Scrapy's downloader has no public "look at this slot again"; this
            # is what its own later-call runs.
            self.downloader._process_queue(self)
        finally:
            self.cleared = False
        inc(self.stats, "ledger/acquired", self.dispatched)
        if self.holding is not None and not self.dispatched:
            self._release()  # nothing left to send (the crawl is stopping)

    def ended(self) -> None:
        """A download of this slot ended: release the hold, look at the queue again."""
        if self.holding is not None and not self.transferring:
            self._release()
        if self.latercall is not None:
            self.latercall.cancel()
            self.latercall = None

    def _renew_later(self) -> None:
        loop = asyncio.get_event_loop()
        self.renewing = loop.call_later(self.ledger.lease_timeout / 3, self._renew)

    def _renew(self) -> None:
        if self.holding is not None:
            self.ledger.renew(self.origin, self.holding)
            self._renew_later()

    def _release(self) -> None:
        token, self.holding = self.holding, None
        if self.renewing is not None:
            self.renewing.cancel()
            self.renewing = None
        if token is not None:
            self.ledger.release(self.origin, token)

    def close(self) -> None:
        super().close()
        if self.asking is not None:
            self.asking.cancel()
            self.asking = None
        if not self.transferring:
            self._release()
