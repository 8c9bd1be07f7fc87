"""Compressed payloads that inflate to far more than they weigh, made in a fraction of a
second and without ever holding what they inflate to.

``gzip_zeros(1 << 30)`` is one gzip stream of a GiB of zeros in about 1 MB: zlib's
``compressobj`` is given the zeros a MiB at a time, each MiB followed by a full flush,
which empties zlib's window; from the second MiB on it writes the same bytes for every
MiB, so those are repeated instead of compressed again. The trailer's CRC-32 is computed
a MiB at a time. ``brotli_zeros`` streams the zeros through brotli's compressor.
"""

from __future__ import annotations

import struct
import zlib

import brotli

MIB = 1 << 20
_ZEROS = bytes(MIB)
_END = b"\x03\x00"  # an empty final deflate block (fixed Huffman codes)


def gzip_zeros(size: int) -> bytes:
    """``size`` zero bytes (a whole number of MiB, at least two) as one gzip stream."""
    assert size % MIB == 0 and size >= 2 * MIB, size
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    first = compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    each = compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size // MIB):
        crc = zlib.crc32(_ZEROS, crc)
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    return first + each * (size // MIB - 1) + _END + trailer


def brotli_zeros(size: int) -> bytes:
    """``size`` zero bytes (a whole number of MiB) as one brotli stream."""
    assert size % MIB == 0, size
    compressor = brotli.Compressor(quality=1)
    return b"".join(compressor.process(_ZEROS) for _ in range(size // MIB)) + compressor.finish()
