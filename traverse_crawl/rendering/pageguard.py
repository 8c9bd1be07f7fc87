"""The browser side of rendering: what a rendered page may fetch, and when it is taken.

scrapy-playwright calls :func:`init_page` for every rendered request before it
navigates. It installs one route that answers every request the page makes itself,
so the browser's own network stack never sends anything: each URL passes the egress
guard, redirects are never left to the browser, and the navigation is fetched at the
Scrapy request's URL (docs/rendering.md, "What the browser may do"). :func:`settle`
decides when the page is taken.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

from playwright.async_api import (
    APIResponse,
    BrowserContext,
    Page,
    Route,
    WebSocketRoute,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request as BrowserRequest

from traverse_crawl.egress import rules as egress
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.attempt import CONDITIONAL_HEADERS
from traverse_crawl.fetch.content import resolve_content_type
from traverse_crawl.meta_keys import (
    RENDER_DENIED,
    RENDER_FAILED,
    RENDER_GUARD,
    RENDER_HANDOFF,
    WARC_NAVIGATION,
)
from traverse_crawl.rendering.navigation import Navigator
from traverse_crawl.rendering.settle import PageState, settle_page
from traverse_crawl.stats import Stats, inc
from traverse_crawl.warc.records import navigation_record

logger = logging.getLogger(__name__)

INIT_CALLBACK = f"{__name__}.init_page"

# Chromium's own limit on a redirect chain.
MAX_SUBRESOURCE_REDIRECTS = 20
# Headers the browser computes for one hop; never copied onto the next.
_HOP_HEADERS = frozenset(
    {"host", "cookie", "content-length", *(name.decode().lower() for name in CONDITIONAL_HEADERS)}
)

# Every guard of a running crawl, by key: meta holds the key, never the object,
# so requests stay picklable (JOBDIR).
GUARDS: dict[str, PageGuard] = {}


def _redirect_to(url: str) -> dict[str, Any]:
    return {"url": "", "status": 302, "headers": [("Location", url)], "body": b""}


class PageGuard:
    """The route, WebSocket and wait logic shared by every page of one crawl."""

    def __init__(
        self,
        key: str,
        *,
        egress_guard: bool,
        allow: frozenset[str],
        timeout: float,
        wait_for: str,
        stats: Stats | None,
        navigator: Navigator,
        abort_request: Callable[[BrowserRequest], bool | Awaitable[bool]] | None = None,
        keep_navigation: bool = False,
    ) -> None:
        self.key = key
        self.keep_navigation = keep_navigation  # for the WARC writer (warc/extension.py)
        self.navigator = navigator
        self.egress_guard = egress_guard
        self.allow = allow
        self.timeout = timeout
        self.wait_for = wait_for
        self.stats = stats
        self.abort_request = abort_request
        self.pages: weakref.WeakKeyDictionary[Page, PageState] = weakref.WeakKeyDictionary()
        self.contexts: weakref.WeakSet[BrowserContext] = weakref.WeakSet()

    def register(self) -> None:
        GUARDS[self.key] = self

    def unregister(self) -> None:
        GUARDS.pop(self.key, None)

    # -- set-up ---------------------------------------------------------------

    async def init_page(self, page: Page, meta: dict[str, Any], url: str) -> None:
        context = page.context
        state = PageState(meta, time.monotonic() + self.timeout, context.request, url)
        self.pages[page] = state
        if context not in self.contexts:
            self.contexts.add(context)
            # Page routes win over context routes, so this one answers only what
            # no guarded page owns: popups and anything else outside a page.
            await context.route("**", self._refuse_unowned)
            await context.route_web_socket("**", self._on_websocket)
        page.on("popup", self._close_popup)

        async def on_route(route: Route) -> None:
            await self._on_route(state, route)

        # Registered after scrapy-playwright's own route, so this one runs first
        # and answers every request; theirs (continue_, which lets the browser
        # follow redirects) is never reached.
        await page.route("**", on_route)
        await page.route_web_socket("**", self._on_websocket)

    async def _refuse_unowned(self, route: Route) -> None:
        inc(self.stats, "render/popup_blocked")
        with suppress(PlaywrightError):
            await route.abort("blockedbyclient")

    async def _close_popup(self, popup: Page) -> None:
        inc(self.stats, "render/popup_blocked")
        with suppress(PlaywrightError):
            await popup.close()

    # -- requests -------------------------------------------------------------

    async def _refusal(self, state: PageState, url: str) -> FetchError | None:
        if not self.egress_guard:
            return None
        key = urls.origin(url) or url
        if key not in state.verdicts:
            try:
                verdict = await asyncio.wait_for(
                    egress.check_url(url, self.allow), state.remaining_ms() / 1000
                )
            except asyncio.TimeoutError:
                verdict = FetchError("network", f"DNS lookup for {url} timed out")
            state.verdicts[key] = verdict
        return state.verdicts[key]

    async def _on_route(self, state: PageState, route: Route) -> None:
        request = route.request
        try:
            refusal = await self._refusal(state, request.url)
            main = request.is_navigation_request() and request.frame.parent_frame is None
            if refusal is not None:
                inc(self.stats, "render/egress_blocked")
                logger.debug("render: refused %s (%s)", request.url, refusal.message)
                if main and not state.navigated:
                    state.meta[RENDER_DENIED] = refusal.to_dict()
                await route.abort("blockedbyclient")
                return
            if self.abort_request is not None:
                verdict = self.abort_request(request)
                if isinstance(verdict, Awaitable):
                    verdict = await verdict
                if verdict:
                    inc(self.stats, "render/aborted_by_setting")
                    await route.abort("blockedbyclient")
                    return
            if main:
                await self._navigate(state, route)
            else:
                await self._fetch(state, route)
        except Exception as exc:  # the I/O edge: a request that fails is aborted
            logger.debug("render: %s failed: %s", request.url, exc)
            if route.request.is_navigation_request() and RENDER_HANDOFF not in state.meta:
                # The browser would only say net::ERR_FAILED; keep the reason.
                text = str(exc).strip() or type(exc).__name__
                state.meta.setdefault(RENDER_FAILED, text.splitlines()[0])
            with suppress(PlaywrightError):
                await route.abort("failed")

    async def _navigate(self, state: PageState, route: Route) -> None:
        # The navigation (the first main-frame request) is fetched without redirects.
        # A redirect, a status outside 2xx or a document that is not HTML is handed back
        # to Scrapy instead of being rendered: the render middleware turns it into a
        # plain response, so Scrapy's redirect middleware follows the hop with robots,
        # egress and politeness, and a PDF is captured as a PDF.
        request = route.request
        if state.navigated:
            # A script or meta-refresh navigation: stopped here and handed back to
            # Scrapy as a redirect, so robots, egress and politeness see the hop.
            inc(self.stats, "render/client_redirects")
            state.meta.setdefault(RENDER_HANDOFF, _redirect_to(request.url))
            state.redirected.set()
            # A 204 answer to a navigation leaves the document in place (no error page).
            await route.fulfill(status=204, body=b"")
            return
        state.navigated = True
        headers = {k: v for k, v in (await request.all_headers()).items() if k not in _HOP_HEADERS}
        # At the Scrapy request's URL, with its exact target (navigation.py).
        answer = await self.navigator.fetch(state.url, headers, state.remaining_ms())
        if self.keep_navigation:  # rendered or handed back, the WARC writer's record
            record = navigation_record(
                answer.url, answer.status, answer.wire_headers, answer.wire_body
            )
            state.meta[WARC_NAVIGATION] = record
        content_type = answer.header("content-type")
        if 200 <= answer.status < 300 and resolve_content_type(content_type) == "html":
            await route.fulfill(status=answer.status, headers=answer.fulfilled(), body=answer.body)
            return
        state.meta[RENDER_HANDOFF] = answer.handoff()
        await route.abort("blockedbyclient")

    async def _fetch(self, state: PageState, route: Route) -> None:
        # The browser would follow a redirect without asking the route again
        # (Playwright: "the handler will only be called for the first url if the
        # response is a redirect"), so a sub-resource's hops are followed here, each
        # hop checked, and the final answer is fulfilled.
        request = route.request
        url = request.url
        response: APIResponse = await route.fetch(max_redirects=0, timeout=state.remaining_ms())
        hops = 0
        while 300 <= response.status < 400 and "location" in response.headers:
            hops += 1
            target = urls.normalize(response.headers["location"], url)
            await response.dispose()
            if target is None or hops > MAX_SUBRESOURCE_REDIRECTS:
                await route.abort("failed")
                return
            refusal = await self._refusal(state, target)
            if refusal is not None:
                inc(self.stats, "render/egress_blocked")
                logger.debug("render: refused redirect to %s (%s)", target, refusal.message)
                await route.abort("blockedbyclient")
                return
            keep_method = response.status in (307, 308)
            headers = {
                k: v for k, v in (await request.all_headers()).items() if k not in _HOP_HEADERS
            }
            response = await state.api.fetch(
                target,
                method=request.method if keep_method else "GET",
                headers=headers,
                data=request.post_data_buffer if keep_method else None,
                max_redirects=0,
                timeout=state.remaining_ms(),
            )
            url = target
        await route.fulfill(response=response)

    async def _on_websocket(self, ws: WebSocketRoute) -> None:
        # Playwright's connect_to_server() reached no server once the page's HTTP
        # requests are fulfilled by this guard (Playwright 1.65, Chromium 156), so
        # a rendered page opens no WebSocket at all: closed, never sent.
        inc(self.stats, "render/websocket_closed")
        with suppress(PlaywrightError):
            await ws.close()

    # -- taking the page ------------------------------------------------------

    async def settle(self, page: Page) -> None:
        await settle_page(page, self.pages[page], self.timeout, self.wait_for)


async def init_page(page: Page, request: Any) -> None:
    """scrapy-playwright's page init callback: guard the page, or close it.

    scrapy-playwright only logs an exception raised here and navigates anyway, so
    a page that could not be guarded is closed: its navigation then fails.
    """
    try:
        guard = GUARDS[request.meta[RENDER_GUARD]]
        await guard.init_page(page, request.meta, request.url)
    except BaseException:
        with suppress(PlaywrightError):
            await page.close()
        raise


async def settle(page: Page, key: str) -> None:
    """The ``PageMethod`` that waits until the page is taken (module docstring)."""
    await GUARDS[key].settle(page)
