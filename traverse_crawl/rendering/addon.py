"""The add-on's render part: scrapy-playwright on only when pages are rendered (docs/rendering.md).

``traverse_crawl.Addon`` calls :func:`update_render_settings` last. When
``TRAVERSE_RENDER`` is ``always`` or ``on-shell-warning`` and ``TRAVERSE_MODE`` is not
``replay``, it checks the browser once (:func:`check_render`: a browser that cannot start
stops the crawl before any request) and sets ``RenderMiddleware`` at 540, the download
handlers and scrapy-playwright's settings, never over what the user set
(docs/rendering.md, "The browser"). Otherwise it changes nothing and no browser starts.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings

from traverse_crawl.config.extras import require_extra
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.rendering.browser import check_browser, launch_options

logger = logging.getLogger(__name__)

HANDLER = "traverse_crawl.rendering.handler.RenderDownloadHandler"
PLAIN_HANDLER = "traverse_crawl.fetch.request.ExactTargetDownloadHandler"
MIDDLEWARE_PRIORITY = 540


def renders(config: TraverseConfig) -> bool:
    """Pages are rendered: a policy other than ``never``, and not in replay."""
    return config.render != "never" and config.mode != "replay"


def _user_launch_options(settings: BaseSettings) -> dict[str, Any]:
    try:
        return dict(settings.getdict("PLAYWRIGHT_LAUNCH_OPTIONS"))
    except ValueError as exc:
        raise ConfigError("PLAYWRIGHT_LAUNCH_OPTIONS", f"expected a JSON object: {exc}") from None


def check_render(settings: BaseSettings) -> None:
    """Everything rendering needs before the first request, as a ``ConfigError``.

    For ``scrapy crawl``'s start-up check as well as for the add-on; the
    browser launch is done once per process (``traverse_crawl.rendering.browser``).
    """
    config = TraverseConfig.from_settings(settings)
    if not renders(config):
        return
    require_extra("TRAVERSE_RENDER", "render", repr(config.render))
    if settings.get("PLAYWRIGHT_CDP_URL") or settings.get("PLAYWRIGHT_CONNECT_URL"):
        return  # a remote browser: nothing local to start
    browser_type = str(settings.get("PLAYWRIGHT_BROWSER_TYPE") or "chromium")
    check_browser(browser_type, launch_options(_user_launch_options(settings)))


def update_render_settings(settings: BaseSettings) -> None:
    """The settings rendering needs, when pages are rendered (see above)."""
    # Parsed without caching: the crawler's TraverseConfig is parsed later, from
    # the settings this function has finished changing.
    config = TraverseConfig.from_settings(settings)
    if not renders(config):
        return
    check_render(settings)
    # Imported here, once check_render() found scrapy-playwright: the middleware
    # module imports Playwright, which a crawl that never renders does not need.
    from traverse_crawl.rendering.middleware import RenderMiddleware

    settings.setdefault_in_component_priority_dict(
        "DOWNLOADER_MIDDLEWARES", RenderMiddleware, MIDDLEWARE_PRIORITY
    )
    # scrapy-playwright's handler over the exact-target one (a request without
    # meta["playwright"] still takes the HTTP/1.1 path through it), in place of the
    # project's own default but never of a handler the user named.
    handlers = dict(settings.getdict("DOWNLOAD_HANDLERS"))
    for scheme in ("http", "https"):
        if handlers.get(scheme) in (None, PLAIN_HANDLER):
            handlers[scheme] = HANDLER
    _set(settings, "DOWNLOAD_HANDLERS", handlers)
    if not settings.get("PLAYWRIGHT_BROWSER_TYPE"):
        _set(settings, "PLAYWRIGHT_BROWSER_TYPE", "chromium")
    options = launch_options(_user_launch_options(settings))
    _set(settings, "PLAYWRIGHT_LAUNCH_OPTIONS", options)
    if settings.get("PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT") is None:
        timeout_ms = round(config.download_timeout * 1000)
        _set(settings, "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT", timeout_ms)
    # scrapy-playwright's own default, stated so that a lower CONCURRENT_REQUESTS
    # bounds the open pages too.
    if not settings.get("PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"):
        pages = settings.getint("CONCURRENT_REQUESTS") or 16
        _set(settings, "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT", pages)
    logger.info(
        "render: TRAVERSE_RENDER=%s with %s %s",
        config.render,
        settings.get("PLAYWRIGHT_BROWSER_TYPE"),
        options.get("executable_path") or "(Playwright's own build)",
    )


def _set(settings: BaseSettings, name: str, value: Any) -> None:
    # A value the user set at a higher priority was read and kept above; writing
    # the merged value at that priority is what makes the merge take effect.
    current = settings.getpriority(name) or 0
    settings.set(name, value, priority=max(current, SETTINGS_PRIORITIES["addon"]))
