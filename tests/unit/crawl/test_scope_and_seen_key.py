"""The crawl policy's rules on their own: scope kinds, patterns, hops, trap rules, seen keys."""

from __future__ import annotations

import pytest

from traverse_crawl.crawl import scope as scopelib
from traverse_crawl.crawl.scope import Policy, PolicySpec, host_of, registrable_domain
from traverse_crawl.crawl.seen_key import SeenKey, trap_rule


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.org/a", "example.org"),
        ("https://user:pw@example.org:8443/a?b", "example.org"),
        ("http://[::1]:8080/", "[::1]"),
        ("http://127.0.0.1:5/x", "127.0.0.1"),
    ],
)
def test_host_of_a_serialised_url(url: str, host: str) -> None:
    assert host_of(url) == host


def test_the_registrable_domain_comes_from_the_shipped_list_without_a_download() -> None:
    assert registrable_domain("www.example.co.uk") == "example.co.uk"
    assert registrable_domain("alice.github.io") == "alice.github.io"  # a private suffix
    assert registrable_domain("127.0.0.1") == ""
    assert registrable_domain("localhost") == ""
    assert registrable_domain("co.uk") == ""
    assert scopelib._extractor().suffix_list_urls == ()


def policy(seed: str, **values: object) -> Policy:
    return Policy(seed, PolicySpec(**values))  # type: ignore[arg-type]


def test_each_scope_kind() -> None:
    origin = policy("https://www.example.com/docs/index.html")
    assert origin.rule("https://www.example.com/x") and not origin.rule("http://www.example.com/x")
    host = policy("https://www.example.com/", scope="host")
    assert host.rule("http://www.example.com:8080/x") and not host.rule("https://example.com/")
    domain = policy("https://www.example.com/", scope="domain")
    assert domain.rule("http://docs.example.com/") and domain.rule("https://example.com/")
    assert not domain.rule("https://badexample.com/") and not domain.rule("https://example.org/")
    by_ip = policy("http://127.0.0.1:8000/", scope="domain")  # no registrable domain: host
    assert by_ip.rule("http://127.0.0.1:9/") and not by_ip.rule("http://localhost:8000/")
    prefix = policy("https://www.example.com/docs/index.html", scope="prefix")
    assert prefix.rule("https://www.example.com/docs/") and prefix.rule(
        "https://www.example.com/docs/a/b"
    )
    assert not prefix.rule("https://www.example.com/docsx") and not prefix.rule(
        "https://www.example.com/"
    )
    assert prefix.rule("https://u:p@www.example.com/docs/a")
    assert not prefix.rule("https://u:p@www.example.com/blog/")


def test_exclude_wins_then_scope_then_traps_and_hops_reach_out_of_scope() -> None:
    p = policy(
        "https://example.com/", scope="origin", include=("^https://cdn[.]",),
        exclude=("/search",), extra_hops=1, trap_guards=True, max_url_length=40,
    )  # fmt: skip
    assert p.judge("https://example.com/search", 0) == ("excluded", None)
    assert p.judge("https://cdn.example.net/search", 0) == ("excluded", None)
    assert p.judge("https://cdn.example.net/a", 0) is None  # included
    assert p.judge("https://other.org/a", 0) is None  # one hop out
    assert p.judge("https://other.org/a", 1) == ("off-origin", None)
    assert p.judge("https://other.org/" + "x" * 40, 1) == ("off-origin", None)
    assert p.judge("https://example.com/" + "x" * 40, 1) == ("trap", "url-length")
    assert p.follows(0) and not p.follows(1)
    assert policy("https://example.com/", scope="host").judge("https://a.org/", 0) == (
        "out-of-scope", None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/a/b/c", None),
        ("/" + "/".join(str(n) for n in range(32)), None),
        ("/" + "/".join(str(n) for n in range(33)), "path-depth"),
        ("/x/a/x/b/x/c/x", "repeated-segment"),
        ("/x/a/x/b/x/c?x/x/x/x", None),  # the query is not the path
        ("/a/////b", None),  # empty segments are not segments that repeat
    ],
)
def test_trap_rules(path: str, rule: str | None) -> None:
    assert trap_rule("http://example.org" + path, 2048) == rule
    assert trap_rule("http://example.org" + path, 10) == "url-length"


def test_seen_keys() -> None:
    url = "http://e.org/p?b=2&utm_source=x&a=1&b=1&fbclid=z&ref=nav"
    assert SeenKey("verbatim")(url) == url
    assert SeenKey("sorted-query")(url) == (
        "http://e.org/p?a=1&b=2&b=1&fbclid=z&ref=nav&utm_source=x"
    )
    assert SeenKey("no-tracking")(url) == "http://e.org/p?a=1&b=2&b=1&ref=nav"
    assert SeenKey("no-tracking", ["ref"])(url) == "http://e.org/p?a=1&b=2&b=1"
    assert SeenKey("no-tracking")("http://e.org/p?utm_medium=feed") == "http://e.org/p"
    assert SeenKey("sorted-query")("http://e.org/p") == "http://e.org/p"


def test_the_default_spec_is_todays_rule_and_keeps_the_fast_path() -> None:
    assert PolicySpec().is_default
    assert PolicySpec(max_url_length=10, ignore_params=("ref",)).is_default  # unused alone
    assert not PolicySpec(seen_key="sorted-query").is_default


def test_patterns_are_searched_as_one_expression_with_each_ones_meaning() -> None:
    joined = scopelib.any_of(("/search", "[?&]sort="))
    assert joined is not None and joined.search("https://e.org/p?a=1&sort=up")
    assert not joined.search("https://e.org/sorted")
    # A back-reference or a global flag keeps its own pattern's meaning.
    backref = scopelib.any_of((r"/(\w+)/\1/", "/x"))
    assert backref is not None and backref.search("/a/a/") and not backref.search("/a/b/")
    flagged = scopelib.any_of(("/never", "(?i)/FAQ"))
    assert flagged is not None and flagged.search("https://e.org/faq")
    assert scopelib.any_of(()) is None
