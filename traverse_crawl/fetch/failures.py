"""One readable sentence for a download that failed at the network level.

Scrapy and Twisted report such a failure as nested wrappers (``DownloadFailedError``
raised from ``ResponseFailed``, whose ``reasons`` hold ``ConnectionDone``,
``SSL.Error``, ...) whose ``str()`` is a list of reprs, and neither library words
them for a user: the innermost known cause becomes ``request to URL failed: CAUSE``.
"""

from __future__ import annotations

from collections.abc import Iterator

from OpenSSL import SSL
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    ResponseDataLossError,
)
from service_identity import VerificationError
from twisted.internet import error as tx
from twisted.web._newclient import ParseError, ResponseNeverReceived


def causes(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc``, then what it wraps: ``__cause__`` chains and Twisted's ``reasons``."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(
            getattr(reason, "value", None) for reason in getattr(current, "reasons", ()) or ()
        )
        stack.append(current.__cause__)


def is_untrusted_certificate(exc: BaseException | None) -> bool:
    """A TLS certificate that failed verification: retrying cannot change it."""
    return any(_certificate_problem(cause) is not None for cause in causes(exc))


def describe(exc: BaseException | None, url: str) -> str:
    """``request to URL failed: CAUSE``, one sentence with no Python reprs."""
    return f"request to {url} failed: {_cause(exc)}"


def _cause(exc: BaseException | None) -> str:
    never_received = False
    for cause in causes(exc):
        if isinstance(cause, ResponseNeverReceived):
            never_received = True
        phrase = _phrase(cause, never_received)
        if phrase is not None:
            return phrase
    name = type(exc).__name__ if exc is not None else "unknown"
    return f"an unexpected network error ({name})"


def _phrase(cause: BaseException, never_received: bool) -> str | None:
    certificate = _certificate_problem(cause)
    if certificate is not None:
        return certificate
    if isinstance(cause, SSL.Error):
        return f"the TLS handshake failed ({_ssl_reasons(cause) or 'no reason given'})"
    if isinstance(cause, (tx.ConnectionRefusedError, DownloadConnectionRefusedError)):
        return "the connection was refused"
    if isinstance(cause, (tx.DNSLookupError, CannotResolveHostError)):
        detail = str(cause).strip().rstrip(".")
        return detail if detail and "<" not in detail else "the host name could not be resolved"
    if isinstance(cause, ResponseDataLossError):
        return "the connection closed before the whole body arrived"
    if isinstance(cause, ParseError):
        return f"the server sent a malformed HTTP response ({cause.args[0]})"
    if isinstance(cause, (tx.ConnectionDone, tx.ConnectionLost)):
        if never_received:
            return "the server closed the connection without sending a response"
        return "the server closed the connection before the response was complete"
    if isinstance(cause, tx.TCPTimedOutError):
        return "the connection timed out"
    if isinstance(cause, tx.ConnectError):
        why = cause.osError or (cause.args[0] if cause.args else None)
        return f"could not connect ({why})" if why else "could not connect"
    return None


def _certificate_problem(cause: BaseException) -> str | None:
    if isinstance(cause, VerificationError):
        return "the server's TLS certificate is not trusted (it is not valid for this host)"
    if isinstance(cause, SSL.Error) and "certificate verify failed" in _ssl_reasons(cause):
        return (
            "the server's TLS certificate is not trusted (certificate verify failed); "
            "set DOWNLOAD_VERIFY_CERTIFICATES=False to allow it"
        )
    return None


def _ssl_reasons(error: SSL.Error) -> str:
    """pyOpenSSL's ``[(lib, func, reason), ...]`` as ``reason; reason``."""
    parts = []
    for entry in error.args[0] if error.args and isinstance(error.args[0], list) else ():
        if isinstance(entry, tuple) and entry:
            parts.append(str(entry[-1]))
    return "; ".join(p for p in parts if p)
