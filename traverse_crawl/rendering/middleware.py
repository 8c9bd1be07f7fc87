"""Render pages in Chromium through scrapy-playwright: the ``TRAVERSE_RENDER`` policy.

The add-on's render part (``rendering/addon.py``) adds this middleware at 540 only when
pages are rendered, so it imports Playwright at the top: a crawl that never renders never
imports this module. Under ``always`` every page request is a rendered attempt; under
``on-shell-warning`` a plain attempt comes first, and a JavaScript shell gets one
rendered attempt of its final URL, the plain response kept if that fails. Its meta keys
and stats are listed in docs/rendering.md.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object
from scrapy_playwright.page import PageMethod

from traverse_crawl.config.settings import get_config
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.attempt import drop_validators, next_attempt
from traverse_crawl.fetch.exceptions import PageFailed, RenderWaitTimeout
from traverse_crawl.meta_keys import (
    HINT,
    PAGE_ID,
    RENDER,
    RENDER_DENIED,
    RENDER_ESCALATION,
    RENDER_FAILED,
    RENDER_FALLBACK,
    RENDER_FINAL,
    RENDER_GUARD,
    RENDER_HANDOFF,
    ROBOTS,
    SNAPSHOT,
    WARNINGS,
)
from traverse_crawl.politeness.redirect_middleware import RedirectMiddleware
from traverse_crawl.rendering import navigation, pageguard
from traverse_crawl.rendering.escalation import always_warnings, escalation, judge, shell_signals
from traverse_crawl.rendering.response import as_rendered_html, freeze, thaw, utf8_body
from traverse_crawl.stats import inc

logger = logging.getLogger(__name__)

ADDON = SETTINGS_PRIORITIES["addon"]
# The browser context every rendered page opens in.
CONTEXT = "traverse"


def is_page(meta: dict[str, Any]) -> bool:
    return PAGE_ID in meta and not meta.get(ROBOTS)


class RenderMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.render == "never" or config.mode == "replay":
            raise NotConfigured
        self.crawler = crawler
        self.policy = config.render
        self.timeout_ms = round(config.download_timeout * 1000)
        self.maxsize = config.download_maxsize
        abort = crawler.settings.get("PLAYWRIGHT_ABORT_REQUEST")
        self.guard = pageguard.PageGuard(
            f"{id(crawler):x}-{uuid.uuid4().hex[:8]}",
            egress_guard=config.egress_guard,
            allow=config.egress_allow,
            timeout=config.download_timeout,
            wait_for=config.render_wait_for,
            stats=crawler.stats,
            navigator=navigation.Navigator(crawler),
            abort_request=load_object(abort) if abort else None,
            keep_navigation=config.mode == "capture" and bool(config.warc_dir),
        )
        self.guard.register()
        # Retries count as set when the user set them, over the add-on's default.
        retries_set = (crawler.settings.getpriority("RETRY_TIMES") or 0) > ADDON
        self.always_warnings = always_warnings(config.revalidate, retries_set)
        # Follows a navigation the page started on its own (see _rendered).
        self.redirect = RedirectMiddleware(crawler)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)
        self.context_kwargs = {
            "user_agent": config.user_agent,
            "service_workers": "block",
            "accept_downloads": False,
            # As Scrapy's HTTP client: verified unless DOWNLOAD_VERIFY_CERTIFICATES
            # is False (then the TLS middleware warns on each HTTPS page).
            "ignore_https_errors": not config.tls_verify,
        }

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(crawler)

    def engine_stopped(self) -> None:
        self.guard.unregister()

    # -- requests -------------------------------------------------------------

    def process_request(self, request: Request) -> None:
        # At 540: after egress (90) and robots (100). A rendered attempt is marked for
        # scrapy-playwright (the page guard answers every browser request) and is not
        # retried: as in Traverse, the renderer is never retried.
        meta = request.meta
        if not is_page(meta):
            return
        if self.policy == "always":
            meta.setdefault(RENDER, True)
            warnings: list[str] = meta.setdefault(WARNINGS, [])
            warnings.extend(w for w in self.always_warnings if w not in warnings)
        if not meta.get(RENDER):
            meta[RENDER_ESCALATION] = escalation(self.policy, False, False, "not-needed")
            return
        inc(self.crawler.stats, "render/attempts")
        meta.update(
            {
                "playwright": True,
                "playwright_context": CONTEXT,
                "playwright_context_kwargs": dict(self.context_kwargs),
                "playwright_page_init_callback": pageguard.INIT_CALLBACK,
                "playwright_page_goto_kwargs": {
                    # settle() does the waiting, within the attempt's deadline.
                    "wait_until": "commit",
                    "timeout": self.timeout_ms,
                },
                "playwright_page_methods": [PageMethod(pageguard.settle, self.guard.key)],
                RENDER_GUARD: self.guard.key,
                "dont_retry": True,
            }
        )

    # -- responses ------------------------------------------------------------

    def process_response(self, request: Request, response: Response) -> Request | Response:
        # Runs after redirect (600) and retry (550) are done with a response, so it
        # sees the final plain response of a page.
        meta = request.meta
        if not is_page(meta) or meta.get(RENDER_FINAL):
            return response
        if meta.get(RENDER):
            return self._rendered(request, response)
        if self.policy == "on-shell-warning":
            return self._maybe_escalate(request, response)
        return response

    def _rendered(self, request: Request, response: Response) -> Request | Response:
        # A rendered response becomes UTF-8 HTML without ETag/Last-Modified (they
        # describe the server's bytes, not the DOM) and keeps scrapy-playwright's
        # ``playwright`` flag, from which the spider records ``rendered: true``. A
        # navigation the page guard handed back (a redirect, a non-2xx status, a
        # document that is not HTML) continues as the plain response it is: Scrapy's
        # redirect middleware follows a redirect (robots, egress, politeness per hop).
        meta = request.meta
        handoff = meta.pop(RENDER_HANDOFF, None)
        if handoff is not None:
            # The page navigated itself away (a script or meta refresh) after it
            # loaded; the redirect middleware has already run, so it is asked here.
            inc(self.crawler.stats, "render/handed_back")
            response = thaw(handoff, request)
            followed = self.redirect.process_response(request, response)
            if isinstance(followed, Request):
                return followed
        rendered = "playwright" in response.flags
        body = utf8_body(response) if rendered else b""
        location = response.headers.get(b"Location")
        verdict = judge(
            request.url,
            response.status,
            rendered=rendered,
            location=location.decode("latin-1") if location else None,
            escalated=RENDER_FALLBACK in meta,
            size=len(body),
            maxsize=self.maxsize,
        )
        if verdict.error is not None:
            return self._fail(request, verdict.error)
        meta[RENDER_FINAL] = True
        if verdict.kind == "as-fetched":
            # The navigation's own response, handed back by the page guard.
            inc(self.crawler.stats, "render/not_html")
            meta[RENDER_ESCALATION] = escalation(self.policy, False, False, "not-needed")
            return response
        inc(self.crawler.stats, "render/rendered")
        meta[RENDER_ESCALATION] = escalation(
            self.policy, self.policy == "on-shell-warning", True, "rendered"
        )
        return as_rendered_html(response, body, request.url)

    def _maybe_escalate(self, request: Request, response: Response) -> Request | Response:
        meta = request.meta
        snapshot = meta.get(SNAPSHOT)
        header = response.headers.get(b"Content-Type")
        signals_ = shell_signals(
            response.status,
            header.decode("latin-1") if header else None,
            response.body,
            hint=meta.get(HINT),
            not_modified=isinstance(snapshot, dict) and bool(snapshot.get("notModified")),
        )
        if signals_ is None:
            return response
        inc(self.crawler.stats, "render/shell_detected")
        logger.debug("render: %s is a JavaScript shell (%s)", response.url, signals_.describe())
        # A new attempt: nothing of the plain one's (backoff deadline, retries, ...).
        new_meta = next_attempt(meta)
        new_meta[RENDER] = True
        new_meta[RENDER_FALLBACK] = freeze(response)
        # The rendered attempt's warnings are its own; a fallback restores these.
        new_meta[WARNINGS] = list(meta.get(WARNINGS) or [])
        new_meta[RENDER_FALLBACK]["warnings"] = list(new_meta[WARNINGS])
        # The plain attempt already followed the redirects to this URL; a redirect
        # now fails the render, and the plain page is kept.
        new_meta["dont_redirect"] = True
        new_meta.pop(RENDER_ESCALATION, None)
        headers = request.headers.copy()
        drop_validators(headers)
        return request.replace(url=response.url, meta=new_meta, headers=headers, dont_filter=True)

    # -- failures -------------------------------------------------------------

    def process_exception(self, request: Request, exception: Exception) -> Response | None:
        meta = request.meta
        if not is_page(meta) or meta.get(RENDER_FINAL):
            return None
        if not meta.get(RENDER):
            if self.policy == "on-shell-warning":
                meta.setdefault(
                    RENDER_ESCALATION, escalation(self.policy, False, False, "not-needed")
                )
            return None
        handoff = meta.pop(RENDER_HANDOFF, None)
        if handoff is not None:
            inc(self.crawler.stats, "render/handed_back")
            return thaw(handoff, request)
        return self._fail(request, self._error(request, exception))

    def _error(self, request: Request, exception: Exception) -> FetchError:
        meta = request.meta
        if isinstance(exception, PageFailed):
            return exception.error
        denied = meta.pop(RENDER_DENIED, None)
        if denied is not None:
            return FetchError.from_dict(denied)
        if isinstance(exception, RenderWaitTimeout):
            return FetchError("render-error", f"render of {request.url}: {exception}")
        reason = meta.pop(RENDER_FAILED, None)
        if isinstance(exception, PlaywrightTimeoutError) or (reason and "Timeout" in reason):
            return FetchError(
                "render-error", f"render of {request.url} timed out after {self.timeout_ms}ms"
            )
        text = reason or str(exception).strip() or type(exception).__name__
        return FetchError("render-error", f"render of {request.url} failed: {text.splitlines()[0]}")

    def _fail(self, request: Request, error: FetchError) -> Response:
        """Keep the plain page (on-shell-warning), or fail the page with ``error``."""
        meta = request.meta
        inc(self.crawler.stats, "render/failed")
        logger.debug("render failed: %s (%s)", request.url, error.message)
        meta[RENDER_FINAL] = True
        plain = meta.get(RENDER_FALLBACK)
        if plain is None:
            raise PageFailed(error)
        inc(self.crawler.stats, "render/fallback")
        meta[RENDER_ESCALATION] = escalation(
            self.policy, True, True, "render-failed-fallback", error
        )
        meta[WARNINGS] = list(plain.get("warnings", []))
        return thaw(plain, request)
