"""Egress guard rules: which hosts and addresses a crawl may reach (SPEC §18.2, CONTRACT §2).

Pure rules plus one async evaluation with an injectable resolver, so the Scrapy
middleware (``downloadermiddlewares/egress.py``), the pinning resolver
(``resolver.py``) and a Playwright route handler all share one policy.

Settings that drive it (parsed in ``core.config``): ``TRAVERSE_EGRESS_GUARD``
(on by default) and ``TRAVERSE_EGRESS_ALLOW`` (exact WHATWG origins that are
exempt from every check here).

- ``classify_address(ip)``: why an address is refused, or None when public.
- ``check_host(host)``: why a host is refused by name or literal form, or None
  when its fate depends on DNS.
- ``is_allowed(url, allow)``: the origin is in ``TRAVERSE_EGRESS_ALLOW``.
- ``evaluate(url, allow, resolve)``: the whole decision, with the addresses to
  pin; ``check_url(url, allow)``: the same for callers that need only the error.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from traverse_crawl.core import urls
from traverse_crawl.core.errors import FetchError

IPAddress: TypeAlias = "ipaddress.IPv4Address | ipaddress.IPv6Address"
Resolve: TypeAlias = Callable[[str, int], Awaitable[Sequence[str]]]

SETTING = "TRAVERSE_EGRESS_ALLOW"

# Default ports of the schemes that open connections; ws(s) are listed for the
# render component's sub-resource checks (a page can open a WebSocket).
NETWORK_SCHEMES = {"http:": 80, "https:": 443, "ws:": 80, "wss:": 443}
# Schemes a browser or Scrapy serves without any connection.
LOCAL_SCHEMES = frozenset({"data:", "blob:", "about:"})

# SPEC §18.2. Order matters only where ranges nest (broadcast inside 240/4).
_V4_DENIED: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("0.0.0.0/8", "a 'this network' address (0.0.0.0/8)"),
        ("10.0.0.0/8", "a private address (10.0.0.0/8)"),
        ("100.64.0.0/10", "a shared CGNAT address (100.64.0.0/10)"),
        ("127.0.0.0/8", "a loopback address"),
        ("169.254.0.0/16", "a link-local address (169.254.0.0/16, cloud metadata)"),
        ("172.16.0.0/12", "a private address (172.16.0.0/12)"),
        ("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
        ("192.0.2.0/24", "a documentation address (192.0.2.0/24)"),
        ("192.88.99.0/24", "a 6to4 relay anycast address (192.88.99.0/24)"),
        ("192.168.0.0/16", "a private address (192.168.0.0/16)"),
        ("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
        ("198.51.100.0/24", "a documentation address (198.51.100.0/24)"),
        ("203.0.113.0/24", "a documentation address (203.0.113.0/24)"),
        ("224.0.0.0/4", "a multicast address (224.0.0.0/4)"),
        ("255.255.255.255/32", "the broadcast address"),
        ("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
    )
)
_V6_DENIED: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("::/128", "the unspecified address"),
        ("::1/128", "a loopback address"),
        ("64:ff9b:1::/48", "a local-use NAT64 address (64:ff9b:1::/48)"),
        ("100::/64", "a discard-only address (100::/64)"),
        ("2001:2::/48", "a benchmarking address (2001:2::/48)"),
        ("2001::/23", "an IETF protocol assignment (2001::/23)"),
        ("2001:db8::/32", "a documentation address (2001:db8::/32)"),
        ("2002::/16", "a 6to4 address (2002::/16)"),
        ("fc00::/7", "a unique-local address (fc00::/7)"),
        ("fe80::/10", "a link-local address (fe80::/10)"),
        ("fec0::/10", "a site-local address (fec0::/10)"),
        ("ff00::/8", "a multicast address (ff00::/8)"),
    )
)
# IPv6 forms that carry an IPv4 address in their low 32 bits; the IPv4 address
# is what a translator or dual-stack socket ends up reaching (SPEC §18.2).
_V6_EMBEDDING: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), kind)
    for net, kind in (
        ("::ffff:0:0/96", "an IPv4-mapped address"),
        ("::ffff:0:0:0/96", "an IPv4-translated address"),
        ("::/96", "an IPv4-compatible address"),
        ("64:ff9b::/96", "a NAT64 address"),
    )
)

METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata", "instance-data", "metadata.azure.internal"}
)

_CANONICAL_OCTET = re.compile(r"0|[1-9][0-9]{0,2}")
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")
_AUTHORITY = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:[/\\]*([^/?#\\]*)")


def classify_address(address: str | IPAddress) -> str | None:
    """Why ``address`` is not public (``"a loopback address"``), or None when it is."""
    if isinstance(address, str):
        text = address.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        # A scope id (fe80::1%eth0, from getaddrinfo) does not change the range.
        text = text.split("%", 1)[0]
        try:
            ip: IPAddress = ipaddress.ip_address(text)
        except ValueError:
            return "not an IP address"
    else:
        ip = address
    if isinstance(ip, ipaddress.IPv4Address):
        for net4, reason in _V4_DENIED:
            if ip in net4:
                return reason
        return None
    for net6, reason in _V6_DENIED:
        if ip in net6:
            return reason
    for net6, kind in _V6_EMBEDDING:
        if ip in net6:
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
            inner_reason = classify_address(inner)
            if inner_reason is not None:
                return f"{kind} of {inner}, which is {inner_reason}"
            return None
    return None


def _ends_in_number(host: str) -> bool:
    """WHATWG's "ends in a number": such a host is parsed as an IPv4 address."""
    labels = host.split(".")
    if labels and labels[-1] == "" and len(labels) > 1:
        labels.pop()
    return bool(labels) and _NUMERIC_LABEL.fullmatch(labels[-1]) is not None


def _is_canonical_ipv4(host: str) -> bool:
    parts = host.split(".")
    return len(parts) == 4 and all(
        _CANONICAL_OCTET.fullmatch(p) is not None and int(p) <= 255 for p in parts
    )


def check_host(host: str) -> str | None:
    """Why ``host`` (as written in a URL) is refused before any DNS, or None.

    None means: a name whose addresses decide, or a public IP literal.
    """
    name = host.strip().lower()
    if "%" in name:
        # Percent-encoded hosts and IPv6 zone ids are ways to dress up a host.
        return "a host containing '%'"
    if name.startswith("["):
        if not name.endswith("]"):
            return "not a valid IPv6 literal"
        return _classify_literal(name[1:-1])
    if ":" in name:
        return _classify_literal(name)
    # SPEC §18.2: a trailing dot is stripped before the name checks.
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return "a name reserved for the local host"
    if name in METADATA_NAMES:
        return "a cloud metadata host name"
    if _ends_in_number(name):
        if not _is_canonical_ipv4(name):
            return "an obfuscated numeric IPv4 form (hex, octal, integer or partial)"
        return classify_address(name)
    if not name:
        return "an empty host"
    return None


def _classify_literal(text: str) -> str | None:
    try:
        ip = ipaddress.IPv6Address(text)
    except ValueError:
        return "not a valid IPv6 literal"
    return classify_address(ip)


def raw_host(url: str) -> str | None:
    """The host exactly as written in ``url``'s authority (before any parser canonicalises it)."""
    match = _AUTHORITY.match(url.strip())
    if match is None:
        return None
    authority = match.group(1).rpartition("@")[2]
    if authority.startswith("["):
        end = authority.find("]")
        return authority if end < 0 else authority[: end + 1]
    return authority.split(":", 1)[0]


def host_key(host: str) -> str | None:
    """The canonical form of a host, as pins are keyed: WHATWG host, IPv6 without brackets.

    Twisted hands resolvers the Unicode form of an IDN and Scrapy's URL keeps an
    obfuscated IPv4 host as written; both must find the pin made for the WHATWG host.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text).compressed
        except ValueError:
            return None
    parsed = urls.parse(f"http://{text}/")
    if parsed is None or not parsed.hostname:
        return None
    return str(parsed.hostname)


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
    host = host_key(str(parsed.hostname))
    if host is None:
        return Verdict(denied(url, "the host is not valid"))
    port = int(parsed.port) if parsed.port else NETWORK_SCHEMES[scheme]
    literal = str(parsed.hostname).startswith("[") or _is_canonical_ipv4(host)
    if is_allowed(url, allow):
        if literal:
            return Verdict(host=host, port=port, addresses=(host,), allowed_by_setting=True)
        found = await _lookup(resolve, host, port)
        if isinstance(found, FetchError):
            return Verdict(found, host=host, port=port)
        return Verdict(host=host, port=port, addresses=found, allowed_by_setting=True)
    # The raw authority first: a parser may already have turned 0x7f.1 into
    # 127.0.0.1, and the written form is itself a reason to refuse.
    written = raw_host(url)
    for candidate in (written, str(parsed.hostname)):
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
