"""Taking a rendered page: when it is ready, and the state of one rendered attempt.

:func:`settle_page` takes the page once ``TRAVERSE_RENDER_WAIT_FOR`` is attached to
the DOM, else once the network is idle, both within ``DOWNLOAD_TIMEOUT`` from the start
of the attempt; a page that never goes idle is taken anyway, with forage's warning
(docs/rendering.md, "When a page is taken").
"""

from __future__ import annotations

import asyncio
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import APIRequestContext, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.exceptions import ClientRedirect, RenderWaitTimeout
from traverse_crawl.meta_keys import RENDER_HANDOFF, WARNINGS
from traverse_crawl.rendering.escalation import networkidle_warning


@dataclass
class PageState:
    """One rendered attempt: the Scrapy request's meta and the attempt's deadline."""

    meta: dict[str, Any]
    deadline: float
    api: APIRequestContext
    url: str  # the Scrapy request's, byte for byte (navigation.py)
    navigated: bool = False
    redirected: asyncio.Event = field(default_factory=asyncio.Event)
    verdicts: dict[str, FetchError | None] = field(default_factory=dict)

    def remaining_ms(self) -> float:
        return max(1.0, (self.deadline - time.monotonic()) * 1000)

    def warn(self, warning: str) -> None:
        warnings: list[str] = self.meta.setdefault(WARNINGS, [])
        if warning not in warnings:
            warnings.append(warning)


async def _close(page: Page) -> None:
    with suppress(PlaywrightError):
        await page.close()


async def settle_page(page: Page, state: PageState, timeout: float, wait_for: str) -> None:
    """Wait until ``page`` is taken, or raise why it is not (module docstring)."""
    budget = round(timeout * 1000)
    waiting = asyncio.ensure_future(_wait(page, state, wait_for, budget))
    redirected = asyncio.ensure_future(state.redirected.wait())
    try:
        await asyncio.wait({waiting, redirected}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (waiting, redirected):
            task.cancel()
    if RENDER_HANDOFF in state.meta:
        # Navigated away: the document is not taken, the handoff is followed.
        # Closed first, so scrapy-playwright neither waits for a "load" that
        # never comes after a navigation during parsing, nor logs a traceback.
        await _close(page)
        raise ClientRedirect(state.meta[RENDER_HANDOFF]["headers"][0][1])
    try:
        waiting.result()
    except RenderWaitTimeout:
        await _close(page)
        raise


async def _wait(page: Page, state: PageState, wait_for: str, budget: int) -> None:
    if wait_for:
        try:
            await page.wait_for_selector(
                f"css={wait_for}", state="attached", timeout=state.remaining_ms()
            )
        except PlaywrightTimeoutError:
            raise RenderWaitTimeout(
                f"TRAVERSE_RENDER_WAIT_FOR {wait_for!r} did not appear within {budget}ms"
            ) from None
        return
    try:
        await page.wait_for_load_state("domcontentloaded", timeout=state.remaining_ms())
        await page.wait_for_load_state("networkidle", timeout=state.remaining_ms())
    except PlaywrightTimeoutError:
        state.warn(networkidle_warning(budget))
