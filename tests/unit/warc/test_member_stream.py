"""A WACZ member read in place: every seek and read gives the member's bytes."""

from __future__ import annotations

import io
import random
import zipfile

import pytest

from traverse_crawl.warc.member_stream import KEEP, MemberStream


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_reads_and_seeks_give_the_members_bytes(compression):
    rng = random.Random(7)
    data = bytes(rng.getrandbits(8) for _ in range(3 * KEEP // 2)) * 2
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", compression=compression) as archive:
        archive.writestr("archive/data.warc", data)
    with zipfile.ZipFile(packed) as archive:
        stream = MemberStream(archive.open("archive/data.warc"), len(data))
        expected = io.BytesIO(data)
        for _ in range(300):
            # Mostly short jumps back and forward, as reading records makes; a few far.
            if rng.random() < 0.05:
                where = rng.randrange(len(data))
            else:
                where = max(0, min(len(data), expected.tell() + rng.randint(-70_000, 70_000)))
            size = rng.choice([0, 1, 3, 4096, 16384, 1 << 20])
            assert stream.seek(where) == expected.seek(where)
            assert stream.read(size) == expected.read(size)
            assert stream.tell() == expected.tell()
        stream.seek(0)
        assert stream.read() == data
