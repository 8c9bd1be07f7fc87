"""scrapy-playwright's download handler over the project's exact-target handler.

The render add-on installs it when pages are rendered. A request without
``meta["playwright"]`` (robots.txt, a page not escalated) goes through
scrapy-playwright's ``super().download_request``, which is here the exact-target
handler, so its request target is the URL's path and query as they are
(docs/architecture.md, "URLs on the wire"). Chromium requests a rendered page.
"""

from __future__ import annotations

from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from traverse_crawl.fetch.request import ExactTargetDownloadHandler


class RenderDownloadHandler(ScrapyPlaywrightDownloadHandler, ExactTargetDownloadHandler):  # type: ignore[misc]
    """ScrapyPlaywrightDownloadHandler whose plain-HTTP path sends exact request targets."""
