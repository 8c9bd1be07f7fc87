"""Chromium for rendering: default launch options and the start-up check (docs/rendering.md).

``launch_options`` puts Debian's Chromium and its flags under whatever the user set in
``PLAYWRIGHT_LAUNCH_OPTIONS``. ``check_browser`` launches the browser once per process
and configuration and closes it again: without it, scrapy-playwright would fail each
page and the crawl would still exit 0, so a browser that cannot start is a
``ConfigError`` naming ``PLAYWRIGHT_LAUNCH_OPTIONS`` and the executable.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from traverse_crawl.errors import ConfigError

logger = logging.getLogger(__name__)

SETTING = "PLAYWRIGHT_LAUNCH_OPTIONS"
DEFAULT_EXECUTABLE = "/usr/bin/chromium"
# Flags that run Debian's Chromium headless as root in a container (Playwright adds most
# of them itself; --disable-quic it does not).
DEFAULT_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
LAUNCH_TIMEOUT = 30.0

_checked: dict[str, str | None] = {}
_lock = threading.Lock()


def launch_options(user: Mapping[str, Any]) -> dict[str, Any]:
    """The defaults, overridden key by key by the user's ``PLAYWRIGHT_LAUNCH_OPTIONS``."""
    options: dict[str, Any] = {
        "executable_path": DEFAULT_EXECUTABLE,
        "headless": True,
        "args": list(DEFAULT_ARGS),
    }
    options.update(user)
    return options


def check_browser(browser_type: str, options: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` unless the browser starts with ``options``."""
    executable = options.get("executable_path")
    if executable:
        path = os.fspath(executable)
        if not os.path.isfile(path):
            raise ConfigError(SETTING, _missing(path, "does not exist"))
        if not os.access(path, os.X_OK):
            raise ConfigError(SETTING, _missing(path, "is not executable"))
    key = json.dumps([browser_type, options], sort_keys=True, default=str)
    with _lock:
        if key not in _checked:
            _checked[key] = _launch(browser_type, dict(options))
        problem = _checked[key]
    if problem is not None:
        where = repr(os.fspath(executable)) if executable else "Playwright's own browser"
        raise ConfigError(SETTING, f"the browser {where} cannot start: {problem}")


def _missing(path: str, what: str) -> str:
    return (
        f"the browser executable {path!r} {what}; rendering (TRAVERSE_RENDER) needs one: "
        f"install Chromium (apt-get install chromium) or set "
        f'{SETTING}={{"executable_path": "/path/to/chromium"}}'
    )


def _launch(browser_type: str, options: dict[str, Any]) -> str | None:
    """Start and close the browser in a thread; None, or the first line of the error."""
    outcome: list[str | None] = []

    def run() -> None:
        # The sync API refuses to run where an asyncio loop runs; a fresh thread has none.
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as playwright:
                launcher = getattr(playwright, browser_type)
                browser = launcher.launch(**{"timeout": LAUNCH_TIMEOUT * 1000, **options})
                browser.close()
            outcome.append(None)
        except Exception as exc:  # the I/O edge: any failure to start is the answer
            text = str(exc).strip() or type(exc).__name__
            outcome.append(text.splitlines()[0])

    started = time.monotonic()
    thread = threading.Thread(target=run, name="traverse-browser-check", daemon=True)
    thread.start()
    thread.join(LAUNCH_TIMEOUT + 15)
    if not outcome:
        return f"no answer within {LAUNCH_TIMEOUT + 15:g}s"
    if outcome[0] is None:
        logger.info(
            "render: %s starts (checked in %.2fs)",
            options.get("executable_path") or browser_type,
            time.monotonic() - started,
        )
    return outcome[0]
