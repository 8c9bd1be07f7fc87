"""A rendered page's navigation, fetched with the exact request target.

Chromium re-serialises a URL (``|`` in a path becomes ``%7C``) and Playwright's fetch
sends ``pathname + search``, which drops an empty ``?``. So the page guard has
:class:`Navigator` fetch the navigation with the exact-target handler at the URL the
Scrapy request holds, with the browser's headers: the server sees the same request
target as for a page that is not rendered (docs/rendering.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import DownloadTimeoutError, NotConfigured
from scrapy.http import Response

from traverse_crawl.fetch.request import ExactTargetDownloadHandler, WhatwgRequest

# Not forwarded: what the handler computes itself, or what would ask the server
# for a body encoding nobody here decodes.
_NOT_SENT = frozenset({"accept-encoding", "transfer-encoding", "connection"})
# Not handed to the browser: framing of the body as it was sent.
_NOT_FULFILLED = frozenset({b"content-length", b"transfer-encoding", b"connection"})


@dataclass(frozen=True)
class Answer:
    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    # Before decoding, for the WARC writer: its records hold the payload as received.
    wire_headers: list[tuple[str, str]] = field(default_factory=list)
    wire_body: bytes = b""

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)

    def fulfilled(self) -> dict[str, str]:
        """The headers handed to the browser: not the framing of the body as sent."""
        return {k: v for k, v in self.headers if k.lower().encode() not in _NOT_FULFILLED}

    def handoff(self) -> dict[str, Any]:
        """As the render middleware's ``thaw`` reads a handed-back navigation."""
        return {"url": self.url, "status": self.status, "headers": self.headers, "body": self.body}


class Navigator:
    """Made with the render middleware; its handler (and connection pool) is made
    at the first navigation and closed when the engine stops."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.handler: ExactTargetDownloadHandler | None = None
        try:
            self.decoder: HttpCompressionMiddleware | None = HttpCompressionMiddleware.from_crawler(
                crawler
            )
        except NotConfigured:  # COMPRESSION_ENABLED off: bodies as sent, as for pages
            self.decoder = None
        crawler.signals.connect(self.close, signal=signals.engine_stopped)

    async def fetch(self, url: str, headers: dict[str, str], timeout_ms: float) -> Answer:
        """The body decoded as Scrapy decodes a page's (its ``HttpCompressionMiddleware``,
        which also sets ``Accept-Encoding`` in place of the browser's), so the browser
        gets the document, not its transfer encoding; the WARC writer gets the headers
        and body as received. DOWNLOAD_MAXSIZE and the attempt's time left bound it."""
        request = WhatwgRequest(
            url,
            headers={k: v for k, v in headers.items() if k.lower() not in _NOT_SENT},
            meta={"download_timeout": timeout_ms / 1000},
        )
        if self.decoder is not None:
            self.decoder.process_request(request)
        if self.handler is None:
            self.handler = ExactTargetDownloadHandler(self.crawler)
        try:
            response = await self.handler.download_request(request)
        except DownloadTimeoutError as exc:
            # Worded as Playwright's, which the render middleware reports as a timeout.
            raise TimeoutError(f"Timeout {timeout_ms:.0f}ms exceeded (navigation)") from exc
        # Taken first: the decoder removes Content-Encoding from these very headers.
        wire_headers, wire_body = _pairs(response), response.body
        if self.decoder is not None:
            decoded = self.decoder.process_response(request, response)
            assert isinstance(decoded, Response)  # typed Request | Response; always the latter
            response = decoded
        return Answer(
            response.url,
            response.status,
            _pairs(response),
            response.body,
            wire_headers,
            wire_body,
        )

    async def close(self) -> None:
        if self.handler is not None:
            await self.handler.close()
            self.handler = None


def _pairs(response: Response) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in response.headers.items()
        for value in values
    ]
