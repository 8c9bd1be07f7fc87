"""Which hosts and addresses are not public: the egress guard's tables (docs/egress.md).

- ``classify_address(ip)``: why an address is refused, or None when public;
- ``check_host(host)``: why a host is refused by name or literal form (localhost,
  metadata names, ``%``, obfuscated numeric forms), or None when DNS decides;
- ``raw_host(url)`` / ``host_key(host)``: the host as written and as compared.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from typing import TypeAlias

from traverse_crawl.fetch import urls

IPAddress: TypeAlias = "ipaddress.IPv4Address | ipaddress.IPv6Address"

# docs/egress.md, "What is refused". Order matters only where ranges nest
# (broadcast inside 240/4).
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
# is what a translator or dual-stack socket ends up reaching, so it is checked too.
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


# Pure functions of a host string, asked once per request of the same few hosts: kept.
@functools.lru_cache(maxsize=4096)
def is_canonical_ipv4(host: str) -> bool:
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
    # A trailing dot is stripped before the name checks: ``localhost.`` is ``localhost``.
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return "a name reserved for the local host"
    if name in METADATA_NAMES:
        return "a cloud metadata host name"
    if _ends_in_number(name):
        if not is_canonical_ipv4(name):
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


@functools.lru_cache(maxsize=4096)
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
