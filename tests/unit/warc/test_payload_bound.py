"""A payload that inflates past the bound is refused while it inflates: a little of it read,
never more than the bound held (docs/web-archives.md, "Importing archives")."""

from __future__ import annotations

import gzip
import tracemalloc

import brotli
import pytest
from warcio.recordloader import ArcWarcRecord

from tests.support.bombs import MIB, brotli_zeros, gzip_zeros
from tests.unit.warc.test_payload import record_of
from traverse_crawl.warc.payload import PayloadTooLarge, read_payload

GIB = 1 << 30
BOUND = 4 * MIB  # above the gzip bomb's own size (1 MB): only its inflating is bounded


def test_the_bombs_are_what_they_say():
    assert gzip.decompress(gzip_zeros(4 * MIB)) == bytes(4 * MIB)
    assert brotli.decompress(brotli_zeros(4 * MIB)) == bytes(4 * MIB)


def bomb_record(encoding: str) -> tuple[ArcWarcRecord, int]:
    """A response whose payload inflates to a GiB, and the payload's length."""
    payload = gzip_zeros(GIB) if encoding == "gzip" else brotli_zeros(GIB)
    headers = [("Content-Encoding", encoding)]
    return record_of(payload, headers, "http://example.com/bomb"), len(payload)


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_a_bomb_stops_inflating_at_the_bound(encoding):
    record, raw = bomb_record(encoding)
    tracemalloc.start()
    try:
        with pytest.raises(PayloadTooLarge, match=rf"DOWNLOAD_MAXSIZE \({BOUND} bytes\)"):
            read_payload(record, BOUND)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # What was read of the compressed payload: what it takes to inflate past the bound,
    # and one piece more at most, not the whole payload.
    taken = raw - record.raw_stream.limit
    assert taken <= 2 * 64 * 1024 < raw, (taken, raw)
    # Never more than the bound (and a piece of output) held at once.
    assert peak < 2 * BOUND, peak
