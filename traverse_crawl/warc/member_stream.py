"""A WACZ member read in place, with the short backward seeks ``warc/reader.py`` makes.

``zipfile`` gives each member as a stream, but a seek backwards in it starts over
from the member's first byte (and inflates it again when it is compressed), which
costs the whole member per record. Reading a record only ever goes back a little
(a record's head after a look at it, a resync after damage: ``reader.py``'s
``_CHUNK`` at most), so the last bytes read are kept and served again; a longer
jump back is the member stream's own seek. Nothing is written to disk.
"""

from __future__ import annotations

import io
from typing import IO

KEEP = 4 << 20  # more than a resync's chunk (1 MiB) and warcio's read-ahead


class MemberStream(io.RawIOBase):
    """A read-only, seekable view of ``stream`` (positioned at 0) of ``size`` bytes."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        super().__init__()
        self.stream = stream
        self.size = size
        self.kept = bytearray()  # the stream's bytes [start, start + len(kept))
        self.start = 0
        self.pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = max(0, self.size - self.pos)
        end = self.start + len(self.kept)
        if not self.start <= self.pos <= end:  # outside what is kept: the stream's seek
            self.stream.seek(self.pos)
            self.kept.clear()
            self.start = end = self.pos
        while self.pos + size > end:
            more = self.stream.read(max(self.pos + size - end, 1 << 16))
            if not more:
                break
            self.kept += more
            end += len(more)
        at = self.pos - self.start
        data = bytes(self.kept[at : at + size])
        self.pos += len(data)
        behind = self.pos - self.start - KEEP
        if behind > KEEP:  # drop what is further back than KEEP
            del self.kept[:behind]
            self.start += behind
        return data

    def close(self) -> None:
        self.stream.close()
        super().close()
