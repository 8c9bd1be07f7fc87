"""The egress guard's pure rules (docs/egress.md): tables of inputs and outputs, no connections."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import pytest

from traverse_crawl.config.parsers import parse_origins
from traverse_crawl.egress import rules as egress
from traverse_crawl.errors import ConfigError, FetchError

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine that never suspends (the table resolver below answers at once)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    raise AssertionError("the coroutine suspended")


def table_resolver(answers: dict[str, Sequence[str]]) -> egress.Resolve:
    """DNS answers as an input table: a missing name fails like NXDOMAIN."""

    async def resolve(host: str, port: int) -> Sequence[str]:
        if host not in answers:
            raise OSError(f"[Errno -2] Name or service not known: {host!r}")
        return answers[host]

    return resolve


# -- classify_address: every range edge, both sides --------------------------------

IPV4 = [
    ("0.0.0.0", "this network"),
    ("0.255.255.255", "this network"),
    ("1.0.0.0", None),
    ("9.255.255.255", None),
    ("10.0.0.0", "private address (10.0.0.0/8)"),
    ("10.255.255.255", "private address (10.0.0.0/8)"),
    ("11.0.0.0", None),
    ("100.63.255.255", None),
    ("100.64.0.0", "CGNAT"),
    ("100.127.255.255", "CGNAT"),
    ("100.128.0.0", None),
    ("126.255.255.255", None),
    ("127.0.0.0", "loopback"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.255", "loopback"),
    ("128.0.0.0", None),
    ("169.253.255.255", None),
    ("169.254.0.0", "link-local"),
    ("169.254.169.254", "link-local"),
    ("169.254.255.255", "link-local"),
    ("169.255.0.0", None),
    ("172.15.255.255", None),
    ("172.16.0.0", "private address (172.16.0.0/12)"),
    ("172.31.255.255", "private address (172.16.0.0/12)"),
    ("172.32.0.0", None),
    ("191.255.255.255", None),
    ("192.0.0.0", "IETF protocol assignment"),
    ("192.0.0.255", "IETF protocol assignment"),
    ("192.0.1.0", None),
    ("192.0.2.0", "documentation address (192.0.2.0/24)"),
    ("192.0.2.255", "documentation address (192.0.2.0/24)"),
    ("192.0.3.0", None),
    ("192.88.98.255", None),
    ("192.88.99.0", "6to4 relay"),
    ("192.88.99.255", "6to4 relay"),
    ("192.88.100.0", None),
    ("192.167.255.255", None),
    ("192.168.0.0", "private address (192.168.0.0/16)"),
    ("192.168.255.255", "private address (192.168.0.0/16)"),
    ("192.169.0.0", None),
    ("198.17.255.255", None),
    ("198.18.0.0", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("198.20.0.0", None),
    ("198.51.99.255", None),
    ("198.51.100.0", "documentation address (198.51.100.0/24)"),
    ("198.51.100.255", "documentation address (198.51.100.0/24)"),
    ("198.51.101.0", None),
    ("203.0.112.255", None),
    ("203.0.113.0", "documentation address (203.0.113.0/24)"),
    ("203.0.113.255", "documentation address (203.0.113.0/24)"),
    ("203.0.114.0", None),
    ("223.255.255.255", None),
    ("224.0.0.0", "multicast"),
    ("239.255.255.255", "multicast"),
    ("240.0.0.0", "reserved"),
    ("255.255.255.254", "reserved"),
    ("255.255.255.255", "broadcast"),
    ("8.8.8.8", None),
    ("93.184.216.34", None),
]

IPV6 = [
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("0:0:0:0:0:0:0:1", "loopback"),
    ("100::", "discard-only"),
    ("100::ffff:ffff:ffff:ffff", "discard-only"),
    ("100:0:0:1::", None),
    ("2001::", "IETF protocol assignment"),
    ("2001:0:4136:e378::1", "IETF protocol assignment"),  # Teredo
    ("2001:1ff:ffff:ffff::", "IETF protocol assignment"),
    ("2001:200::", None),
    ("2001:2::1", "benchmarking"),
    ("2001:2:0:ffff::", "benchmarking"),
    ("2001:db7:ffff:ffff::", None),
    ("2001:db8::", "documentation"),
    ("2001:db8:ffff:ffff::1", "documentation"),
    ("2001:db9::", None),
    ("2001:ffff::", None),
    ("2002::", "6to4"),
    ("2002:ffff:ffff::", "6to4"),
    ("2003::", None),
    ("fbff:ffff::", None),
    ("fc00::", "unique-local"),
    ("fdff:ffff:ffff::1", "unique-local"),
    ("fe80::", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("febf:ffff::", "link-local"),
    ("fec0::", "site-local"),
    ("feff:ffff::", "site-local"),
    ("ff00::", "multicast"),
    ("ff02::1", "multicast"),
    ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"),
    ("2606:4700:4700::1111", None),
    ("2a00:1450:4001:80b::200e", None),
]

EMBEDDED = [
    ("::ffff:127.0.0.1", "IPv4-mapped address of 127.0.0.1, which is a loopback address"),
    ("::ffff:7f00:1", "IPv4-mapped address of 127.0.0.1"),
    ("::ffff:10.1.2.3", "IPv4-mapped address of 10.1.2.3, which is a private address"),
    ("::ffff:169.254.169.254", "IPv4-mapped address of 169.254.169.254"),
    ("::ffff:8.8.8.8", None),
    ("::ffff:0:127.0.0.1", "IPv4-translated address of 127.0.0.1"),
    ("::ffff:0:192.168.1.1", "IPv4-translated address of 192.168.1.1"),
    ("::ffff:0:8.8.8.8", None),
    ("::127.0.0.1", "IPv4-compatible address of 127.0.0.1"),
    ("::2", "IPv4-compatible address of 0.0.0.2"),
    ("::8.8.8.8", None),
    ("64:ff9b::127.0.0.1", "NAT64 address of 127.0.0.1"),
    ("64:ff9b::a9fe:a9fe", "NAT64 address of 169.254.169.254"),
    ("64:ff9b::8.8.8.8", None),
    ("64:ff9b:1::", "local-use NAT64"),
    ("64:ff9b:1::8.8.8.8", "local-use NAT64"),
    ("64:ff9b:1:ffff:ffff::", "local-use NAT64"),
    ("64:ff9b:2::", None),
]


@pytest.mark.parametrize(("address", "expected"), IPV4 + IPV6 + EMBEDDED)
def test_classify_address(address: str, expected: str | None) -> None:
    reason = egress.classify_address(address)
    if expected is None:
        assert reason is None, f"{address} should be public, got {reason!r}"
    else:
        assert reason is not None and expected in reason, f"{address}: {reason!r}"


def test_classify_address_exact_wording() -> None:
    assert egress.classify_address("127.0.0.1") == "a loopback address"
    assert egress.classify_address("::1") == "a loopback address"
    assert egress.classify_address("10.0.0.1") == "a private address (10.0.0.0/8)"
    assert egress.classify_address("not-an-address") == "not an IP address"


# -- check_host: names, literals and their disguises -------------------------------

HOSTS = [
    # localhost names, any case, with a trailing dot
    ("localhost", "reserved for the local host"),
    ("LOCALHOST", "reserved for the local host"),
    ("localhost.", "reserved for the local host"),
    ("app.localhost", "reserved for the local host"),
    ("a.b.localhost.", "reserved for the local host"),
    ("localhost.example.com", None),
    ("notlocalhost", None),
    # cloud metadata names
    ("metadata.google.internal", "cloud metadata"),
    ("metadata.google.internal.", "cloud metadata"),
    ("Metadata.Google.Internal", "cloud metadata"),
    ("metadata", "cloud metadata"),
    ("metadata.", "cloud metadata"),
    ("instance-data", "cloud metadata"),
    ("instance-data.", "cloud metadata"),
    ("metadata.azure.internal", "cloud metadata"),
    ("metadata.google.internal.example.com", None),
    ("metadata.example.com", None),
    # percent signs
    ("127%2e0%2e0%2e1", "containing '%'"),
    ("exa%6dple.com", "containing '%'"),
    ("[fe80::1%25eth0]", "containing '%'"),
    # obfuscated numeric IPv4 forms
    ("0x7f000001", "obfuscated numeric"),
    ("0X7F000001", "obfuscated numeric"),
    ("0x7f.0.0.1", "obfuscated numeric"),
    ("0x7f.1", "obfuscated numeric"),
    ("0177.0.0.1", "obfuscated numeric"),
    ("0177.1", "obfuscated numeric"),
    ("127.0.0.01", "obfuscated numeric"),
    ("017700000001", "obfuscated numeric"),
    ("2130706433", "obfuscated numeric"),
    ("3232235777", "obfuscated numeric"),
    ("127.1", "obfuscated numeric"),
    ("127.0.1", "obfuscated numeric"),
    ("10.1", "obfuscated numeric"),
    ("1.2.3.4.5", "obfuscated numeric"),
    ("256.0.0.1", "obfuscated numeric"),
    ("0x", "obfuscated numeric"),
    ("0", "obfuscated numeric"),
    ("example.0x1f", "obfuscated numeric"),
    ("example.123", "obfuscated numeric"),
    # canonical IPv4 literals are classified
    ("127.0.0.1", "loopback"),
    ("127.0.0.1.", "loopback"),
    ("0.0.0.0", "this network"),
    ("169.254.169.254", "link-local"),
    ("8.8.8.8", None),
    ("8.8.8.8.", None),
    # IPv6 literals
    ("[::1]", "loopback"),
    ("::1", "loopback"),
    ("[::ffff:7f00:1]", "IPv4-mapped address of 127.0.0.1"),
    ("[64:ff9b::7f00:1]", "NAT64 address of 127.0.0.1"),
    ("[2606:4700:4700::1111]", None),
    ("[zz::1]", "not a valid IPv6 literal"),
    ("[::1", "not a valid IPv6 literal"),
    # ordinary names: DNS decides
    ("example.com", None),
    ("example.com.", None),
    ("xn--bcher-kva.example", None),
    ("123.example", None),
    ("a1.b2.example", None),
    ("", "an empty host"),
]


@pytest.mark.parametrize(("host", "expected"), HOSTS)
def test_check_host(host: str, expected: str | None) -> None:
    reason = egress.check_host(host)
    if expected is None:
        assert reason is None, f"{host!r} should depend on DNS, got {reason!r}"
    else:
        assert reason is not None and expected in reason, f"{host!r}: {reason!r}"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://0x7f000001/x", "0x7f000001"),
        ("http://user:pw@0177.1:8080/", "0177.1"),
        ("http://[::1]:80/", "[::1]"),
        ("HTTP://Example.COM", "Example.COM"),
        ("http://a@b@c.example/", "c.example"),
        ("http://host.example?x=1", "host.example"),
        ("http://host.example#f", "host.example"),
        ("http:\\\\evil.example\\x", "evil.example"),
        ("https://127.0.0.1@evil.example/", "evil.example"),
        ("no scheme here", None),
    ],
)
def test_raw_host(url: str, expected: str | None) -> None:
    assert egress.raw_host(url) == expected


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("Example.COM", "example.com"),
        ("example.com.", "example.com."),
        ("bücher.example", "xn--bcher-kva.example"),
        ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("::FFFF:127.0.0.1", "::ffff:7f00:1"),
        ("0x7f000001", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1"),
        ("exa mple", None),
        ("[zz::1]", None),
    ],
)
def test_host_key(host: str, expected: str | None) -> None:
    assert egress.host_key(host) == expected


# -- the allow-list is exact: scheme, host and port ---------------------------------

ALLOW = parse_origins(
    "TRAVERSE_EGRESS_ALLOW",
    ["http://127.0.0.1:8000", "https://intranet.example/", "http://[::1]:8000"],
)


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:8000/x", True),
        ("http://127.0.0.1:8000", True),
        ("http://127.0.0.1:8000/a?b#c", True),
        ("http://127.0.0.1:8001/", False),
        ("http://127.0.0.1/", False),
        ("https://127.0.0.1:8000/", False),
        ("http://localhost:8000/", False),
        ("http://127.0.0.2:8000/", False),
        ("http://0x7f000001:8000/", True),  # the same origin once parsed
        ("https://intranet.example/a", True),
        ("https://intranet.example:443/", True),
        ("https://INTRANET.example/", True),
        ("https://intranet.example:8443/", False),
        ("http://intranet.example/", False),
        ("https://intranet.example./", False),
        ("https://sub.intranet.example/", False),
        ("http://[::1]:8000/", True),
        ("http://[0:0::1]:8000/", True),
        ("http://[::1]:8001/", False),
        ("not a url", False),
    ],
)
def test_allow_list_is_exact(url: str, allowed: bool) -> None:
    assert egress.is_allowed(url, ALLOW) is allowed


def test_allow_list_empty_allows_nothing() -> None:
    assert egress.is_allowed("http://127.0.0.1:8000/", frozenset()) is False


@pytest.mark.parametrize("value", ["http://127.0.0.1:8000/path", "ftp://127.0.0.1", "nonsense"])
def test_allow_list_setting_rejects_non_origins(value: str) -> None:
    with pytest.raises(ConfigError, match="TRAVERSE_EGRESS_ALLOW"):
        parse_origins("TRAVERSE_EGRESS_ALLOW", [value])


# -- evaluate: the whole decision ----------------------------------------------------

DNS = table_resolver(
    {
        "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
        "private.example": ["10.0.0.7"],
        "mixed.example": ["93.184.216.34", "169.254.169.254"],
        "mapped.example": ["::ffff:127.0.0.1"],
        "intranet.example": ["10.1.1.1"],
        "empty.example": [],
    }
)


def evaluate(url: str, allow: frozenset[str] = frozenset()) -> egress.Verdict:
    return run(egress.evaluate(url, allow, DNS))


def test_refusal_message_names_url_reason_and_setting() -> None:
    verdict = evaluate("http://127.0.0.1:5000/x")
    assert verdict.error is not None
    assert verdict.error.kind == "egress-denied"
    assert verdict.error.message == (
        "egress guard refused http://127.0.0.1:5000/x: 127.0.0.1 is a loopback address; "
        "add the origin to TRAVERSE_EGRESS_ALLOW to allow it"
    )
    assert verdict.addresses == ()


@pytest.mark.parametrize(
    ("url", "message_part"),
    [
        ("http://private.example/", "private.example resolves to 10.0.0.7, a private address"),
        ("http://mixed.example/", "mixed.example resolves to 169.254.169.254, a link-local"),
        ("http://mapped.example/", "resolves to ::ffff:127.0.0.1, an IPv4-mapped address"),
        ("http://localhost:8000/", "localhost is a name reserved for the local host"),
        ("http://metadata.google.internal./", "metadata.google.internal. is a cloud metadata"),
        ("http://0x7f000001/", "0x7f000001 is an obfuscated numeric IPv4 form"),
        ("http://2130706433:8000/", "2130706433 is an obfuscated numeric IPv4 form"),
        ("http://0x5db8d822/", "0x5db8d822 is an obfuscated numeric"),  # public, still refused
        ("http://[::1]:8000/", "[::1] is a loopback address"),
        ("http://[::ffff:169.254.169.254]/", "IPv4-mapped address of 169.254.169.254"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local"),
        ("http://10.0.0.1/", "10.0.0.1 is a private address"),
        ("https://192.168.1.1:8443/", "192.168.1.1 is a private address"),
        ("file:///etc/passwd", "the scheme file: is not http(s)"),
        ("ftp://ftp.example/", "the scheme ftp: is not http(s)"),
        ("http://a.0x1/", "cannot be parsed"),
    ],
)
def test_refused(url: str, message_part: str) -> None:
    verdict = evaluate(url)
    assert verdict.error is not None and verdict.error.kind == "egress-denied"
    assert message_part in verdict.error.message
    assert verdict.error.message.startswith(f"egress guard refused {url}: ")
    assert verdict.addresses == ()


def test_public_name_pins_every_checked_address() -> None:
    verdict = evaluate("https://public.example/a")
    assert verdict.error is None
    assert (verdict.host, verdict.port) == ("public.example", 443)
    assert verdict.addresses == ("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946")
    assert verdict.allowed_by_setting is False


def test_public_literal_needs_no_dns() -> None:
    verdict = evaluate("http://93.184.216.34:8080/")
    assert verdict.error is None
    assert (verdict.host, verdict.port, verdict.addresses) == (
        "93.184.216.34",
        8080,
        ("93.184.216.34",),
    )


@pytest.mark.parametrize("url", ["http://unknown.example/", "http://empty.example/"])
def test_dns_failure_is_a_network_error_not_a_refusal(url: str) -> None:
    verdict = evaluate(url)
    assert verdict.error is not None
    assert verdict.error.kind == "network"
    assert verdict.error.message.startswith("DNS lookup failed for ")


def test_allowed_origin_skips_checks_but_still_pins() -> None:
    allow = frozenset({"http://127.0.0.1:8000", "https://intranet.example", "http://localhost:9"})
    literal = evaluate("http://127.0.0.1:8000/x", allow)
    assert literal.error is None and literal.allowed_by_setting
    assert literal.addresses == ("127.0.0.1",)
    named = evaluate("https://intranet.example/", allow)
    assert named.error is None and named.allowed_by_setting
    assert (named.host, named.port, named.addresses) == ("intranet.example", 443, ("10.1.1.1",))
    # allowed, but the name does not resolve: still a network error
    assert evaluate("http://localhost:9/", allow).error == FetchError(
        "network",
        "DNS lookup failed for localhost: [Errno -2] Name or service not known: 'localhost'",
    )
    # the same host on another port or scheme is not allowed
    other = evaluate("http://127.0.0.1:8001/", allow)
    assert other.error is not None and other.error.kind == "egress-denied"
    https = evaluate("https://127.0.0.1:8000/", allow)
    assert https.error is not None and https.error.kind == "egress-denied"


@pytest.mark.parametrize("url", ["data:text/html,<p>x</p>", "about:blank", "blob:https://a/b"])
def test_local_schemes_open_no_connection(url: str) -> None:
    verdict = evaluate(url)
    assert verdict == egress.Verdict()


def test_check_url_returns_only_the_error() -> None:
    assert run(egress.check_url("https://public.example/", frozenset(), DNS)) is None
    error = run(egress.check_url("ws://private.example/socket", frozenset(), DNS))
    assert error is not None and error.kind == "egress-denied"
    assert "10.0.0.7" in error.message
