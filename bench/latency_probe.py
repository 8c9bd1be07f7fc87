"""A Scrapy extension for the ``latency`` bench: the order in which a crawl's work happens.

Enabled by the bench only; what it records: the comment above ``LatencyProbe``.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import time
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


# Enabled by the bench only (``-s LATENCY_PROBE_OUT=FILE`` and ``EXTENSIONS``), for
# traverse and the plain spider alike. It records, in order, one letter per event:
#
# - ``R``: a request reached the downloader (Scrapy's ``request_reached_downloader``);
# - ``H``: the download handler was called for it;
# - ``W``: Twisted wrote a transport's buffered bytes (``doWrite``: requests go
#   out on the loop turn after the handler buffered them);
# - ``L``: a request left the downloader (``request_left_downloader``: its response is in);
# - ``P``: the spider started its work on a page (``TraverseSpider._outcome``, or
#   the plain spider's ``parse``);
# - ``S``: an item was scraped.
#
# It also stamps ``R`` and ``L`` with the wall clock and the process's own CPU
# time, stamps ``R``, ``H``, ``W`` and ``P`` with the number of the event loop's
# turn they happened in (asyncio's ``_run_once``, wrapped: bench-only), and writes
# everything as JSON when the spider closes. The order does
# not depend on how loaded the machine is, which is what makes it usable on a
# shared machine: the figure the bench takes from it is how many pages' work
# ran between a request being handed to the download handler and the socket
# write that sends it.
class LatencyProbe:
    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path
        self.reached: list[tuple[float, float]] = []
        self.left: list[tuple[float, float]] = []
        self.events: list[str] = []
        self.turn = 0  # the event loop's turns so far
        self.turns: dict[str, list[int]] = {"R": [], "H": [], "W": [], "P": []}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LatencyProbe:
        path = crawler.settings.get("LATENCY_PROBE_OUT")
        if not path:
            raise NotConfigured
        probe = cls(crawler, path)
        connect = crawler.signals.connect
        connect(probe.on_opened, signal=signals.spider_opened)
        connect(probe.on_reached, signal=signals.request_reached_downloader)
        connect(probe.on_left, signal=signals.request_left_downloader)
        connect(lambda **_: probe.events.append("S"), signal=signals.item_scraped)
        connect(probe.on_closed, signal=signals.spider_closed)
        return probe

    def on_opened(self, spider: Any) -> None:
        """Wrap the download handlers, Twisted's writes and the spider's page work."""
        from twisted.internet import abstract

        assert self.crawler.engine is not None
        loop = asyncio.get_event_loop()
        run_once = loop._run_once  # type: ignore[attr-defined]

        def counted() -> None:
            self.turn += 1
            run_once()

        loop._run_once = counted  # type: ignore[attr-defined]
        handlers = self.crawler.engine.downloader.handlers
        download = handlers.download_request_async

        async def handler_called(request: Any) -> Any:
            self.events.append("H")
            self.turns["H"].append(self.turn)
            return await download(request)

        handlers.download_request_async = handler_called  # type: ignore[method-assign]
        do_write: Any = abstract.FileDescriptor.doWrite

        def wrote(transport: Any) -> Any:
            self.events.append("W")
            self.turns["W"].append(self.turn)
            return do_write(transport)

        abstract.FileDescriptor.doWrite = wrote  # type: ignore[method-assign]
        name = "_outcome" if hasattr(spider, "_outcome") else "parse"
        work = getattr(spider, name)

        def page_work(*args: Any, **kwargs: Any) -> Any:
            self.events.append("P")
            self.turns["P"].append(self.turn)
            return work(*args, **kwargs)

        setattr(spider, name, page_work)

    def on_reached(self, **_: Any) -> None:
        self.events.append("R")
        self.turns["R"].append(self.turn)
        self.reached.append((time.monotonic(), time.process_time()))

    def on_left(self, **_: Any) -> None:
        self.events.append("L")
        self.left.append((time.monotonic(), time.process_time()))

    def on_closed(self, **_: Any) -> None:
        with open(self.path, "w", encoding="utf-8") as out:
            data = {
                "reached": self.reached,
                "left": self.left,
                "events": "".join(self.events),
                "turns": self.turns,
            }
            json.dump(data, out)


def analyse_probe(path: str, concurrency: int) -> dict[str, float]:
    """The probe's figures for one crawl.

    - ``work_before_send``: pages whose work started between a request's hand-over
      to the download handler and the next socket write (mean over requests);
      ``sent_first_share``: the share of requests with none.
    - ``work_reach_to_send``: pages whose work started in the loop's turns from a
      request reaching the downloader up to the turn whose poll wrote it (the
      write happens first in that turn), mean over requests; unlike
      ``work_before_send`` it also counts work that ran before the handler call
      in the same turn.
    - ``refill_*``: with ``concurrency`` requests in the downloader, the (k+N)-th
      to reach it takes the place the k-th to leave freed: how long that place
      stayed empty, in wall and in CPU milliseconds (means).
    """
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    events: str = data["events"]
    waits = []
    for at, event in enumerate(events):
        if event == "H":
            end = events.find("W", at)
            waits.append(events.count("P", at, end if end >= 0 else len(events)))
    reached, left = data["reached"], data["left"]
    pairs = [
        (reached[k + concurrency], left[k])
        for k in range(min(len(left), len(reached) - concurrency))
        if reached[k + concurrency][0] >= left[k][0]
    ]
    out: dict[str, float] = {}
    turns = data.get("turns")
    if turns:
        writes, work = turns["W"], turns["P"]
        before = []
        for reached, called in zip(turns["R"], turns["H"], strict=False):
            k = bisect.bisect_right(writes, called)  # the first write on a later turn
            if k < len(writes):
                stop = bisect.bisect_left(work, writes[k])
                before.append(stop - bisect.bisect_left(work, reached))
        if before:
            out["work_reach_to_send"] = round(sum(before) / len(before), 2)
    if waits:
        out["work_before_send"] = round(sum(waits) / len(waits), 2)
        out["sent_first_share"] = round(sum(w == 0 for w in waits) / len(waits), 3)
    if pairs:
        out["refill_wall_ms"] = round(sum(r[0] - e[0] for r, e in pairs) * 1000 / len(pairs), 2)
        out["refill_cpu_ms"] = round(sum(r[1] - e[1] for r, e in pairs) * 1000 / len(pairs), 2)
    return out
