"""Map a failed download (a Twisted ``Failure``) to a typed ``FetchError`` (CONTRACT §3).

This is the I/O edge where broad exceptions are caught (STYLE §8): anything
unexpected becomes ``network`` with its message, never a traceback.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.exceptions import DownloadCancelledError, DownloadTimeoutError
from twisted.internet import defer
from twisted.internet.error import TimeoutError as TxTimeoutError
from twisted.python.failure import Failure

from traverse_crawl.core.errors import FetchError
from traverse_crawl.exceptions import PageFailed


def fetch_error_from_failure(
    failure: Failure, request: Request, timeout: float, maxsize: int
) -> FetchError:
    exc = failure.value
    if isinstance(exc, PageFailed):
        return exc.error
    if isinstance(exc, (DownloadTimeoutError, TxTimeoutError, defer.TimeoutError)):
        return timeout_error(request, timeout)
    if isinstance(exc, (DownloadCancelledError, defer.CancelledError)):
        # Scrapy cancels a download that passes DOWNLOAD_MAXSIZE ("... larger
        # than download max size ..."), by Content-Length or while streaming.
        if "max size" in str(exc) or not str(exc):
            return too_large_error(request, request.meta.get("download_maxsize", maxsize))
    message = str(exc).strip() or type(exc).__name__
    return FetchError("network", message)


def timeout_error(request: Request, timeout: float) -> FetchError:
    milliseconds = round(request.meta.get("download_timeout", timeout) * 1000)
    return FetchError("timeout", f"request to {request.url} timed out after {milliseconds}ms")


def too_large_error(request: Request, maxsize: int | None) -> FetchError:
    limit = f"{maxsize} bytes" if maxsize else "DOWNLOAD_MAXSIZE"
    return FetchError("too-large", f"response from {request.url} exceeds {limit}")
