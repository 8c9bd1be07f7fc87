"""Scrapy's HTTP/1.1 handler with a cap on the size of response headers.

The status line and headers of a response may take ``TRAVERSE_MAX_HEADER_SIZE``
bytes; past that the download fails with ``HeadersTooLarge`` (the page is
``too-large``, not retried). Each request is also sent on the socket at once
rather than on the event loop's next turn (``_CappedProtocol.request``).
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from scrapy.crawler import Crawler
from twisted.internet.defer import Deferred

from traverse_crawl.config.settings import get_config


class HeadersTooLarge(Exception):
    """The response's status line and headers passed ``TRAVERSE_MAX_HEADER_SIZE``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response headers exceed {limit} bytes (TRAVERSE_MAX_HEADER_SIZE)")
        self.limit = limit


# Twisted's response parser keeps every header line it is sent: a server that
# streams headers forever grows one response without bound, and a header line
# longer than its 16 KiB line limit closes the connection as if the server had
# ("Connection was closed cleanly"), which would then be retried for nothing.
# Scrapy's handler hard-codes its parser class and swaps it in after the protocol
# builds one (``_LenientHTTP11ClientProtocol.request``); this module does the same
# one step further, on Scrapy's private classes, because neither Scrapy nor Twisted
# has a setting for it. Scrapy is pinned to 2.19.x.
class _CappedParser(_LenientHTTPClientParser):
    header_limit = 65536
    header_bytes = 0

    def lineReceived(self, line: bytes) -> None:
        # Only the status line and headers arrive as lines: the body is raw.
        self.header_bytes += len(line) + 1
        if self.header_bytes > self.header_limit:
            raise HeadersTooLarge(self.header_limit)  # the protocol gives up on the connection
        super().lineReceived(line)

    def lineLengthExceeded(self, line: bytes) -> None:
        raise HeadersTooLarge(self.header_limit)


class _CappedProtocol(_LenientHTTP11ClientProtocol):
    header_limit = 65536

    def request(self, request: Any) -> Deferred[Any]:
        d = super().request(request)
        parser = self._parser
        assert parser is not None
        parser.__class__ = _CappedParser  # same state, as Scrapy's own swap (see above)
        parser.header_limit = parser.MAX_LENGTH = self.header_limit  # type: ignore[attr-defined]
        parser.header_bytes = 0  # type: ignore[attr-defined]
        # Twisted only buffers the request here and sends it when the loop next
        # reports the socket writable: after every callback already queued, the
        # page work of a whole wave of responses among them, so a request freed
        # by a response waited behind that work (at 50 ms per response, most of
        # the time outside the server's latency was that wait). Send it now;
        # what the socket does not take stays buffered for the loop, as before.
        # Under TLS the wrapper hands ``doWrite`` to the socket's transport, which
        # sends the encrypted bytes it holds (a handshake's, until it completes).
        # A socket error is left to the loop: the socket stays registered for
        # writing, and the loop's own ``doWrite`` meets the error and disconnects.
        # A transport already closed has no socket left to write to: left alone.
        transport = self.transport
        do_write = getattr(transport, "doWrite", None)
        if do_write is not None and getattr(transport, "connected", False):
            do_write()
        return d


class HeaderCappedHTTP11DownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        limit = get_config(crawler).max_header_size

        class Protocol(_CappedProtocol):
            header_limit = limit

        class Factory(_LenientHTTP11ClientFactory):
            def buildProtocol(self, addr: Any) -> _CappedProtocol:
                return Protocol(self._quiescentCallback)  # type: ignore[no-untyped-call]

        self._pool._factory = Factory


def headers_too_large(exc: BaseException | None) -> HeadersTooLarge | None:
    """The ``HeadersTooLarge`` behind a failed download, if any: Scrapy raises
    ``DownloadFailedError`` from Twisted's ``ResponseFailed``, whose reasons hold it."""
    while exc is not None:
        if isinstance(exc, HeadersTooLarge):
            return exc
        for reason in getattr(exc, "reasons", ()):
            if isinstance(getattr(reason, "value", None), HeadersTooLarge):
                return reason.value  # type: ignore[no-any-return]
        exc = exc.__cause__
    return None
