"""Meta robots directives: ``X-Robots-Tag`` prefixes, the head scan and its bounds."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from traverse_crawl.politeness.robots_meta import (
    HEAD_BYTES,
    NOTHING,
    RobotsMeta,
    bot_token,
    decoded_head,
    head_directives,
    header_directives,
    nofollow_lines,
    robots_meta,
)


def test_the_bot_token_is_the_user_agents_first_product_token_lowercased():
    assert bot_token("TestBot/2.0 (+https://example.invalid)") == "testbot"
    assert bot_token("  traverse_crawl-bot ") == "traverse_crawl-bot"


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["noarchive"], [("noarchive", "X-Robots-Tag")]),
        (["NoFollow, NOARCHIVE"], [("nofollow", "X-Robots-Tag"), ("noarchive", "X-Robots-Tag")]),
        # The prefix covers the whole list after it, in any case.
        (["TestBot: nofollow, noarchive"],
         [("nofollow", "X-Robots-Tag (TestBot:)"), ("noarchive", "X-Robots-Tag (TestBot:)")]),
        (["otherbot: noarchive, nofollow"], []),  # another bot's
        (["otherbot: noarchive", "nofollow"], [("nofollow", "X-Robots-Tag")]),
    ],
)  # fmt: skip
def test_x_robots_tag_values_apply_bare_or_with_our_token(values, expected):
    assert header_directives(values, "testbot") == expected


def test_a_directive_with_a_value_is_not_a_bots_prefix():
    values = ["unavailable_after: 25 Jun 2010 15:00:00 PST, noarchive"]
    assert robots_meta(values, None, "testbot").noarchive == ("noarchive", "X-Robots-Tag")


def test_the_head_scan_reads_robots_and_the_bots_meta_only():
    body = (
        b'<html><head><meta name="Robots" content="noarchive">'
        b'<meta name="googlebot" content="nofollow"><meta name="TESTBOT" content="NoFollow">'
        b"</head><body></body></html>"
    )
    assert head_directives(body, "testbot") == [
        ("noarchive", '<meta name="Robots">'),
        ("nofollow", '<meta name="TESTBOT">'),
    ]


def test_the_head_scan_stops_where_the_body_starts():
    assert head_directives(b'<p>text</p><meta name="robots" content="noarchive">', "x") == []
    late = b"<head><title>t</title>" + b" " * HEAD_BYTES + b'<meta name="robots" content="none">'
    assert head_directives(late, "x") == []  # past the bound


def test_none_is_both_and_the_first_directive_names_each():
    verdict = robots_meta(["none"], b'<meta name="robots" content="noarchive">', "x")
    assert verdict == RobotsMeta(("none", "X-Robots-Tag"), ("none", "X-Robots-Tag"))
    assert verdict.noarchive_message("http://a/") == (
        "none in X-Robots-Tag of http://a/: the page is not archived"
    )
    assert robots_meta([], b'<meta name="robots" content="index, follow">', "x") is NOTHING
    assert robots_meta(["noarchive"], None, "x").noarchive == ("noarchive", "X-Robots-Tag")


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate
        ("br", brotli.compress),
        ("gzip, br", lambda data: brotli.compress(gzip.compress(data))),
    ],
)
def test_the_head_is_read_through_the_content_coding(encoding, encode):
    page = b'<head><meta name="robots" content="noarchive"></head>' + b"x" * (2 * HEAD_BYTES)
    head = decoded_head(encode(page), encoding)
    assert head == page[:HEAD_BYTES]


def test_a_damaged_or_unknown_coding_gives_the_bytes_as_they_are():
    assert decoded_head(b"not gzip", "gzip") == b"not gzip"
    assert decoded_head(b"zstd bytes", "zstd") == b"zstd bytes"


def test_a_nofollow_pages_links_become_lines_in_document_order():
    others = [["mailto:a@b", "not-http", 0], ["http://o/", "off-origin", 1], ["x", "link-limit", 2]]
    assert nofollow_lines(["http://s/a", "http://s/b"], others) == [
        ["mailto:a@b", "nofollow", 0],
        ["http://s/a", "nofollow", 0],
        ["http://o/", "nofollow", 0],
        ["http://s/b", "nofollow", 0],
        ["x", "nofollow", 0],
    ]


def test_an_end_of_head_spelled_in_a_script_does_not_hide_a_later_meta():
    body = (
        b"<html><head><script>document.write('<body>')</script>"
        b'<meta name="robots" content="nofollow"></head><body><p>x</p></body></html>'
    )
    assert head_directives(body, "x") == [("nofollow", '<meta name="robots">')]
