"""traverse_crawl's exceptions, and the mapping of a failed download to a ``FetchError``.

Pages fail with typed outcomes (``traverse_crawl.errors.FetchError``); the exceptions
here are control flow inside Scrapy, and ``CommandFailed`` a store command's failure.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError, IgnoreRequest
from scrapy.utils._compression import _DecompressionMaxSizeExceeded
from twisted.internet import defer
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.python.failure import Failure

from traverse_crawl.errors import FetchError
from traverse_crawl.fetch.failures import describe
from traverse_crawl.fetch.handler import headers_too_large


class PageFailed(IgnoreRequest):
    """A middleware decided the page's fate (robots denial, egress refusal, ...).

    An ``IgnoreRequest``, so Scrapy routes it to the request's errback, where the
    spider records ``error``.
    """

    def __init__(self, error: FetchError) -> None:
        super().__init__(error.message)
        self.error = error


class RenderWaitTimeout(Exception):
    """``TRAVERSE_RENDER_WAIT_FOR`` did not appear in time: the render failed."""


class ClientRedirect(Exception):
    """The page navigated itself elsewhere; the hop is handed back to Scrapy."""


class CommandFailed(Exception):
    """A user-facing failure of a store command: one line on stderr, exit status 1."""


def fetch_error_from_failure(
    failure: Failure, request: Request, timeout: float, maxsize: int
) -> FetchError:
    """The typed error of a failed download: the I/O edge where broad exceptions are caught.

    Anything unexpected becomes ``network`` with one sentence naming the URL and the
    cause (``failures.describe``), never a traceback or a repr.
    """
    exc = failure.value
    assert exc is not None
    if isinstance(exc, PageFailed):
        return exc.error
    if isinstance(exc, (DownloadTimeoutError, TxTimeoutError, defer.TimeoutError)):
        return timeout_error(request, timeout)
    if isinstance(exc, (DownloadCancelledError, defer.CancelledError)):
        # Scrapy cancels a download that passes DOWNLOAD_MAXSIZE ("... larger
        # than download max size ..."), by Content-Length or while streaming.
        if "max size" in str(exc) or not str(exc):
            return too_large_error(request, request.meta.get("download_maxsize", maxsize))
    too_many = headers_too_large(exc)
    if too_many is not None:
        return FetchError(
            "too-large",
            f"response headers from {request.url} exceed {too_many.limit} bytes "
            "(TRAVERSE_MAX_HEADER_SIZE)",
        )
    if isinstance(exc.__cause__, _DecompressionMaxSizeExceeded):
        # HttpCompressionMiddleware stops a decompression bomb (gzip, deflate,
        # brotli, zstd) at DOWNLOAD_MAXSIZE: the page is too-large, as for
        # a body over it (docs/settings.md, DOWNLOAD_MAXSIZE).
        return too_large_error(request, request.meta.get("download_maxsize", maxsize))
    return FetchError("network", describe(exc, request.url))


def timeout_error(request: Request, timeout: float) -> FetchError:
    milliseconds = round(request.meta.get("download_timeout", timeout) * 1000)
    return FetchError("timeout", f"request to {request.url} timed out after {milliseconds}ms")


def too_large_error(request: Request, maxsize: int | None) -> FetchError:
    limit = f"{maxsize} bytes" if maxsize else "DOWNLOAD_MAXSIZE"
    return FetchError("too-large", f"response from {request.url} exceeds {limit}")
