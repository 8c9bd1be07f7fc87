"""Egress guard rules: which hosts and addresses a crawl may reach (docs/egress.md).

Pure rules plus one async evaluation with an injectable resolver, so the Scrapy
middleware, the pinning resolver and a Playwright route handler share one
policy: ``evaluate(url, allow, resolve)`` gives the whole decision with the
addresses to pin, ``check_url(url, allow)`` only the error. The tables of
non-public hosts and addresses are in ``egress/addresses.py`` (re-exported here).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from traverse_crawl.egress.addresses import (
    check_host,
    classify_address,
    host_key,
    is_canonical_ipv4,
    raw_host,
)
from traverse_crawl.errors import FetchError
from traverse_crawl.fetch import urls

__all__ = [
    "Verdict",
    "check_host",
    "check_url",
    "classify_address",
    "denied",
    "evaluate",
    "host_key",
    "is_allowed",
    "raw_host",
    "system_resolve",
]

Resolve: TypeAlias = Callable[[str, int], Awaitable[Sequence[str]]]

SETTING = "TRAVERSE_EGRESS_ALLOW"

# Default ports of the schemes that open connections; ws(s) are listed for the
# render component's sub-resource checks (a page can open a WebSocket).
NETWORK_SCHEMES = {"http:": 80, "https:": 443, "ws:": 80, "wss:": 443}
# Schemes a browser or Scrapy serves without any connection.
LOCAL_SCHEMES = frozenset({"data:", "blob:", "about:"})


def is_allowed(url: str, allow: frozenset[str]) -> bool:
    """The URL's WHATWG origin is exactly one of ``allow`` (scheme, host and port)."""
    return bool(allow) and urls.origin(url) in allow


def denied(url: str, why: str) -> FetchError:
    return FetchError(
        "egress-denied",
        f"egress guard refused {url}: {why}; add the origin to {SETTING} to allow it",
    )


@dataclass(frozen=True)
class Verdict:
    """The guard's decision on one URL.

    ``error`` is ``egress-denied``, or ``network`` when DNS failed (retryable, like
    any DNS failure). Otherwise ``addresses`` are the checked addresses a
    connection to ``host``:``port`` must use (empty when nothing connects).
    """

    error: FetchError | None = None
    host: str = ""
    port: int = 0
    addresses: tuple[str, ...] = ()
    allowed_by_setting: bool = False


async def system_resolve(host: str, port: int) -> list[str]:
    """All addresses of ``host`` from the system resolver, without blocking the loop."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return _unique(str(info[4][0]) for info in infos)


def _unique(addresses: Iterable[object]) -> list[str]:
    seen: dict[str, None] = {}
    for address in addresses:
        seen.setdefault(str(address), None)
    return list(seen)


async def evaluate(url: str, allow: frozenset[str], resolve: Resolve = system_resolve) -> Verdict:
    """Decide whether ``url`` may be fetched, resolving its host once with ``resolve``.

    ``resolve(host, port)`` returns addresses or raises ``OSError`` (``TimeoutError``
    included) when the lookup fails.
    """
    parsed = urls.parse(url)
    if parsed is None:
        return Verdict(denied(url, "the URL cannot be parsed"))
    scheme = str(parsed.protocol)
    if scheme in LOCAL_SCHEMES:
        return Verdict()
    if scheme not in NETWORK_SCHEMES:
        return Verdict(denied(url, f"the scheme {scheme} is not http(s)"))
    hostname = str(parsed.hostname)
    host = host_key(hostname)
    if host is None:
        return Verdict(denied(url, "the host is not valid"))
    port = int(parsed.port) if parsed.port else NETWORK_SCHEMES[scheme]
    literal = hostname.startswith("[") or is_canonical_ipv4(host)
    # is_allowed(url, allow), from the URL parsed here rather than parsed again.
    if allow and scheme in urls.HTTP_SCHEMES and str(parsed.origin) in allow:
        if literal:
            return Verdict(host=host, port=port, addresses=(host,), allowed_by_setting=True)
        found = await _lookup(resolve, host, port)
        if isinstance(found, FetchError):
            return Verdict(found, host=host, port=port)
        return Verdict(host=host, port=port, addresses=found, allowed_by_setting=True)
    # The raw authority first: a parser may already have turned 0x7f.1 into
    # 127.0.0.1, and the written form is itself a reason to refuse.
    written = raw_host(url)
    for candidate in (written, hostname):
        if candidate is None:
            continue
        reason = check_host(candidate)
        if reason is not None:
            return Verdict(denied(url, f"{candidate} is {reason}"), host=host, port=port)
    if literal:
        return Verdict(host=host, port=port, addresses=(host,))
    found = await _lookup(resolve, host, port)
    if isinstance(found, FetchError):
        return Verdict(found, host=host, port=port)
    for address in found:
        reason = classify_address(address)
        if reason is not None:
            why = f"{host} resolves to {address}, {reason}"
            return Verdict(denied(url, why), host=host, port=port)
    return Verdict(host=host, port=port, addresses=found)


async def _lookup(resolve: Resolve, host: str, port: int) -> tuple[str, ...] | FetchError:
    try:
        found = tuple(_unique(await resolve(host, port)))
    except OSError as exc:
        return FetchError("network", f"DNS lookup failed for {host}: {exc}")
    if not found:
        return FetchError("network", f"DNS lookup failed for {host}: no address found")
    return found


async def check_url(
    url: str, allow: frozenset[str], resolve: Resolve = system_resolve
) -> FetchError | None:
    """None when ``url`` may be requested, else why not (for a Playwright route handler).

    The error is ``egress-denied``, or ``network`` when its host does not resolve;
    either way the caller should not let the request go out. The browser resolves
    again on its own, so this check does not pin (see docs/egress.md).
    """
    return (await evaluate(url, allow, resolve)).error
