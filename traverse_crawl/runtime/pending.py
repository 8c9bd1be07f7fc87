"""The results written at the end of a crawl that its exit status waits for.

A tier of futures on the crawler each: a seed's checks (``checks/extension.py``), then
the outputs written once those are in (``operations/stats_file.py``); the exit status
(``operations/exit_status.py``) awaits both. Here, beneath the features, so that a
feature registers its result without importing the operations above it.
"""

from __future__ import annotations

import asyncio
from typing import Any

# The results written at the end of a crawl that the exit status depends on, as futures
# on the crawler: a seed's checks (which may start after the last spider_closed
# handler, once a manifest upload is done), then the stats file (written once those are
# in). Scrapy awaits every engine_stopped handler but starts them together, so each of
# these waits for the tier before it instead of relying on the handlers' order.
_RESULTS = "_traverse_results_pending"
_OUTPUTS = "_traverse_outputs_pending"


def _pending(crawler: Any, name: str) -> set[asyncio.Future[Any]]:
    pending: set[asyncio.Future[Any]] | None = getattr(crawler, name, None)
    if pending is None:
        pending = set()
        setattr(crawler, name, pending)
    return pending


def result_pending(crawler: Any, future: asyncio.Future[Any]) -> None:
    """``future`` writes a result (a seed's checks) the outputs and the status wait for."""
    pending = _pending(crawler, _RESULTS)
    pending.add(future)
    future.add_done_callback(pending.discard)


def output_pending(crawler: Any, future: asyncio.Future[Any]) -> None:
    """``future`` writes an output (the stats file) the exit status waits for."""
    pending = _pending(crawler, _OUTPUTS)
    pending.add(future)
    future.add_done_callback(pending.discard)


async def _settled(crawler: Any, name: str) -> None:
    await asyncio.sleep(0)  # the handlers started in this turn have registered theirs
    pending = _pending(crawler, name)
    while pending:
        await asyncio.wait(list(pending))
        await asyncio.sleep(0)


async def results_settled(crawler: Any) -> None:
    """Until every pending result is written."""
    await _settled(crawler, _RESULTS)


async def outputs_settled(crawler: Any) -> None:
    """Until every pending output is written."""
    await _settled(crawler, _OUTPUTS)
