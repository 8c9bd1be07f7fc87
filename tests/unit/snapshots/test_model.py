"""Pure tables: content types, decoding, hashing, key order."""

from __future__ import annotations

import hashlib

import pytest

from traverse_crawl.fetch import content
from traverse_crawl.snapshots import model as snap


@pytest.mark.parametrize(
    ("header", "hint", "expected"),
    [
        ("text/html; charset=utf-8", None, "html"),
        ("application/xhtml+xml", None, "html"),
        ("application/pdf", None, "pdf"),
        ("IMAGE/PNG", None, "png"),
        ("image/jpeg", None, "jpeg"),
        ("image/jpg", None, "jpeg"),
        ("image/gif", None, "text"),
        ("application/json", None, "text"),
        ("application/octet-stream", None, "text"),
        (None, None, "text"),
        ("text/html", "pdf", "pdf"),
    ],
)
def test_content_type_resolution(header, hint, expected):
    assert content.resolve_content_type(header, hint) == expected


@pytest.mark.parametrize(
    ("body", "header", "text"),
    [
        (b"caf\xc3\xa9", None, "café"),
        (b"\xef\xbb\xbfcaf\xc3\xa9", "text/html; charset=iso-8859-1", "café"),
        (b"caf\xe9", "text/html; charset=iso-8859-1", "café"),
        (b"caf\xe9", "text/plain", "caf\ufffd"),
        (
            b'<meta charset="windows-1252">\x93q\x94',
            "text/html",
            '<meta charset="windows-1252">“q”',
        ),
        (b"\xff\xfeh\x00i\x00", None, "hi"),
    ],
)
def test_decoding_order(body, header, text):
    assert content.decode_text(body, header) == text


def test_text_snapshot_hash_and_key_order():
    s = snap.build_snapshot(
        source_id="id", url="https://h/", status=200, content_type="html",
        raw_body=b"<h1>Hello</h1>", content_type_header="text/html",
        redirects=["https://h/old"], etag='W/"1"', fetched_at="2026-07-02T00:00:00.000Z",
    )  # fmt: skip
    assert s["bodyHash"] == "e2c6c0ea7c7900c31f953e48d30d5e839801ab90630d751e7c8426ed5859da47"
    assert list(s) == [
        "sourceId", "url", "fetchedAt", "status", "contentType", "body", "bodyHash",
        "redirects", "etag",
    ]  # fmt: skip
    assert "lastModified" not in s and "rendered" not in s
    view = snap.manifest_view(snap.with_flags(s, fromCache=True))
    assert list(view) == [
        "sourceId", "url", "fetchedAt", "status", "contentType", "bodyHash", "redirects",
        "etag", "fromCache",
    ]  # fmt: skip


def test_binary_snapshot_keeps_raw_bytes():
    raw = bytes(range(256))
    s = snap.build_snapshot(
        source_id="id", url="https://h/x.pdf", status=200, content_type="pdf",
        raw_body=raw, content_type_header="application/pdf",
    )  # fmt: skip
    assert s["body"] == "" and s["bodyBytes"] == raw
    assert s["bodyHash"] == hashlib.sha256(raw).hexdigest()


def test_iso_timestamps_have_milliseconds():
    from datetime import datetime, timezone

    moment = datetime(2026, 7, 2, 3, 4, 5, 678999, tzinfo=timezone.utc)
    assert snap.iso_now(moment) == "2026-07-02T03:04:05.678Z"
