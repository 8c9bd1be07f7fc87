"""A record's payload decoded within a bound: each coding, and what is not one."""

from __future__ import annotations

import gzip
import io
import zlib

import brotli
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from tests.support.warctools import write_response
from traverse_crawl.warc.payload import PayloadTooLarge, read_payload

BODY = b"<p>" + b"payload " * 20_000 + b"</p>"


def record_of(  # type: ignore[no-untyped-def]
    payload: bytes, headers: list[tuple[str, str]], url: str = "http://example.com/"
):
    out = io.BytesIO()
    write_response(WARCWriter(out, gzip=False), url, payload, headers)
    out.seek(0)
    return next(iter(ArchiveIterator(out)))


def chunked(data: bytes) -> bytes:
    pieces = [data[i : i + 1000] for i in range(0, len(data), 1000)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@pytest.mark.parametrize(
    ("payload", "headers"),
    [
        (BODY, []),
        (gzip.compress(BODY, mtime=0), [("Content-Encoding", "gzip")]),
        (
            gzip.compress(BODY[:500], mtime=0) + gzip.compress(BODY[500:], mtime=0),
            [("Content-Encoding", "gzip")],
        ),
        (zlib.compress(BODY), [("Content-Encoding", "deflate")]),
        (zlib.compress(BODY)[2:-4], [("Content-Encoding", "deflate")]),  # raw deflate
        (brotli.compress(BODY), [("Content-Encoding", "br")]),
        (
            chunked(gzip.compress(BODY, mtime=0)),
            [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")],
        ),
        (gzip.compress(brotli.compress(BODY), mtime=0), [("Content-Encoding", "br, gzip")]),
        (BODY, [("Content-Encoding", "gzip")]),  # says gzip, is not: kept as it is
        (BODY, [("Content-Encoding", "zstd")]),  # a coding not undone: kept as it is
    ],
)
def test_each_coding_is_undone(payload, headers):
    expected = payload if headers and headers[0][1] == "zstd" else BODY
    assert read_payload(record_of(payload, headers), 10 * len(BODY)) == expected


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_past_the_bound_it_stops(encoding):
    big = b"a" * (50 * len(BODY))
    packed = gzip.compress(big) if encoding == "gzip" else brotli.compress(big)
    record = record_of(packed, [("Content-Encoding", encoding)])
    with pytest.raises(PayloadTooLarge, match=r"DOWNLOAD_MAXSIZE \(100000 bytes\)"):
        read_payload(record, 100_000)


def test_a_raw_payload_past_the_bound_is_not_read():
    with pytest.raises(PayloadTooLarge):
        read_payload(record_of(BODY, []), len(BODY) - 1)
    assert read_payload(record_of(BODY, []), 0) == BODY  # 0: no bound, as in Scrapy
