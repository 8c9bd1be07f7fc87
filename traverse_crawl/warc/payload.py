"""A record's payload, decoded within a bound (docs/web-archives.md, "Importing archives").

warcio's ``content_stream()`` undoes the chunked transfer coding and the content
coding, but it inflates each 16 KiB it reads in one call with no output limit: a
brotli or gzip-in-gzip payload of a few hundred bytes becomes gigabytes at once.
Here the same codings are undone piece by piece, at most ``_PIECE`` bytes of output
per step, so decoding stops as soon as ``limit`` (the crawl's ``DOWNLOAD_MAXSIZE``)
is passed, as Scrapy's ``HttpCompressionMiddleware`` stops a download. The raw
payload is bounded by ``limit`` too, as a download's received bytes are.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

try:
    import brotli
except ImportError:  # PyPy: Scrapy installs brotlicffi there, with the same API
    import brotlicffi as brotli

from warcio.bufferedreaders import ChunkedDataReader
from warcio.recordloader import ArcWarcRecord

_PIECE = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"


class PayloadTooLarge(Exception):
    """The payload, raw or decoded, is larger than the bound."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"payload larger than DOWNLOAD_MAXSIZE ({limit} bytes)")
        self.limit = limit


class _Stream(Protocol):
    def read(self, size: int = ...) -> bytes: ...


def read_payload(record: ArcWarcRecord, limit: int) -> bytes:
    """The record's payload with its transfer and content codings undone; raises
    ``PayloadTooLarge`` past ``limit`` bytes (0: no bound), having decoded at most
    ``limit + _PIECE`` of them. Unknown codings are kept as they are (as warcio does)."""
    stream: Any = record.raw_stream
    raw_length = getattr(stream, "limit", None)
    if limit and isinstance(raw_length, int) and raw_length > limit:
        raise PayloadTooLarge(limit)
    http = record.http_headers
    if http is None or record.rec_type not in ("response", "revisit"):
        return _bounded(_pieces(stream), limit)
    coding = str(http.get_header("transfer-encoding") or "").lower()
    if "chunked" in coding:
        # warcio's de-chunking keeps a chunk in memory: the raw bound above bounds it.
        stream = ChunkedDataReader(stream)
    pieces: Iterable[bytes] = _pieces(stream)
    encodings = [e.strip() for e in str(http.get_header("content-encoding") or "").split(",")]
    encodings = [e for e in encodings if e and e != "identity"]
    if all(e in _DECODERS for e in encodings):
        for encoding in reversed(encodings):  # the last coding applied is undone first
            pieces = _DECODERS[encoding](pieces)
    return _bounded(pieces, limit)


def _pieces(stream: _Stream) -> Iterator[bytes]:
    while piece := stream.read(_PIECE):
        yield piece


def _bounded(pieces: Iterable[bytes], limit: int) -> bytes:
    out = bytearray()
    for piece in pieces:
        out += piece
        if limit and len(out) > limit:
            raise PayloadTooLarge(limit)
    return bytes(out)


def _inflate(pieces: Iterable[bytes], wbits: int) -> Iterator[bytes]:
    """zlib, gzip (members one after another) or raw deflate, ``_PIECE`` at a time.

    As warcio and browsers do, data that does not start as the coding says is taken
    as not encoded; damage further on ends the payload where it is."""
    source = iter(pieces)
    decompressor = zlib.decompressobj(wbits)
    started = False
    for data in source:
        while data:
            try:
                out = decompressor.decompress(data, _PIECE)
            except zlib.error:
                if started:
                    return
                if wbits == zlib.MAX_WBITS:  # deflate sent without its zlib header
                    yield from _inflate(_chain(data, source), -zlib.MAX_WBITS)
                else:
                    yield from _chain(data, source)
                return
            started = True
            if out:
                yield out
            if decompressor.eof:
                rest = decompressor.unused_data
                if wbits != zlib.MAX_WBITS | 16 or not rest.startswith(_GZIP_MAGIC):
                    return  # anything after the stream is not part of it
                decompressor = zlib.decompressobj(wbits)
                data = rest
            else:
                data = decompressor.unconsumed_tail
    return


def _unbrotli(pieces: Iterable[bytes]) -> Iterator[bytes]:
    source = iter(pieces)
    decompressor = brotli.Decompressor()
    started = False
    try:
        for data in source:
            out = decompressor.process(data, output_buffer_limit=_PIECE)
            started = True
            # Input waits inside until the output it makes is taken, as in Scrapy's
            # own bounded brotli decoding.
            while out:
                yield out
                if decompressor.is_finished():
                    return
                out = decompressor.process(b"", output_buffer_limit=_PIECE)
    except brotli.error:
        if not started:
            yield from _chain(data, source)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


_DECODERS = {
    "gzip": lambda pieces: _inflate(pieces, zlib.MAX_WBITS | 16),
    "x-gzip": lambda pieces: _inflate(pieces, zlib.MAX_WBITS | 16),
    "deflate": lambda pieces: _inflate(pieces, zlib.MAX_WBITS),
    "br": _unbrotli,
}
