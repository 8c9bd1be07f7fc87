"""A seed's BFS queue, in memory or mostly in the crawl's spool, and its seen set.

Hand-written because the queue's order is the design: Scrapy's disk queues pickle
requests and keep no random access by position, and the standard library has no
compact set of integers. A crawl's memory must not grow with its pages.
"""

from __future__ import annotations

import json
from array import array
from collections import deque
from collections.abc import Iterator
from typing import Any

from traverse_crawl.crawl import spool as pagelog
from traverse_crawl.crawl.spool import Spool

KEEP = 1024  # committed entries kept: a store failure noted late still finds its page
Entry = tuple[str, int, "str | None"]


class _Fifo:
    """Encoded values, first in first out: a read buffer, spilled chunks, a write buffer."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.chunks: deque[tuple[int, int]] = deque()
        self.buffer: list[bytes] = []
        self.size = 0
        self.reading: deque[bytes] = deque()

    def push(self, value: Any) -> None:
        line = pagelog.encode(value)
        self.buffer.append(line)
        self.size += len(line)
        if self.size >= pagelog.SPILL_BYTES:
            chunk = self.spool.write(b"".join(self.buffer))
            if chunk is not None:
                self.chunks.append(chunk)
                self.buffer, self.size = [], 0

    def pop(self) -> Any:
        if not self.reading:
            if self.chunks:
                data = self.spool.read(*self.chunks.popleft())
                self.reading = deque(data.split(b"\n")[:-1])
            else:
                self.reading, self.buffer, self.size = deque(self.buffer), [], 0
        return json.loads(self.reading.popleft())


class UrlQueue:
    """Entry ``i`` is the ``i``-th URL the frontier queued: URL, depth, and the URL of
    the page whose links queued it (``discoveredFrom``).

    The frontier reads entries in admission order and needs an entry only while its
    page is admitted and not committed, so with a ``Spool`` only that window is in
    memory: new entries go to the spool (a FIFO of chunks, ``crawl/spool.py``), come
    back when they are admitted, and are forgotten ``KEEP`` entries after their page
    is committed. Without a spool every entry stays in memory (the reference, and
    what the tests compare).
    """

    def __init__(self, spool: Spool | None = None) -> None:
        self._fifo = None if spool is None else _Fifo(spool)
        self._items: list[Entry] = []  # entries base, base + 1, ... in memory
        self._base = 0
        self._length = 0

    def append(self, url: str | tuple[str, int], depth: int = 0, parent: str | None = None) -> None:
        if isinstance(url, tuple):  # ``append((url, depth))``, as on a list (the Redis worker)
            url, depth = url
        self._length += 1
        if self._fifo is None:
            self._items.append((url, depth, parent))
        else:
            self._fifo.push([url, depth, parent])

    def entry(self, index: int) -> Entry:
        at = index - self._base
        if at < 0 or index >= self._length:
            raise IndexError(f"queue entry {index} is not held")
        while at >= len(self._items):
            assert self._fifo is not None
            url, depth, parent = self._fifo.pop()
            self._items.append((url, depth, parent))
        return self._items[at]

    def __getitem__(self, index: int) -> tuple[str, int]:
        url, depth, _ = self.entry(index)
        return url, depth

    def __setitem__(self, index: int, value: tuple[str, int]) -> None:
        """Replace an entry held in memory (the Redis worker fills its placeholders)."""
        self._items[index - self._base] = (value[0], value[1], self.entry(index)[2])

    def forget(self, committed: int) -> None:
        """Pages below ``committed`` are committed: their entries may go (with a spool)."""
        drop = committed - KEEP - self._base
        if self._fifo is not None and drop >= KEEP:  # in steps, so a drop is amortised
            del self._items[:drop]
            self._base += drop

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[tuple[str, int]]:
        """The entries held in memory (all of them without a spool)."""
        return ((url, depth) for url, depth, _ in self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, list):  # a list of (url, depth): a Redis queue read back
            return self._base == 0 and list(self) == other
        if not isinstance(other, UrlQueue):
            return NotImplemented
        return (self._base, self._length, list(self)) == (other._base, other._length, list(other))

    __hash__ = None  # type: ignore[assignment]


class HashSet:
    """Nonzero 64-bit integers, by open addressing with linear probing at most half full.

    The seen set: the hashes of the URLs seen (``urls.url_hash``) in one flat array,
    8 to 16 bytes a URL, where a Python set of ints takes about 90.

    The values are hashes, uniform in their low bits, so they are their own slot
    index; 0 marks a free slot and stands for 1.
    """

    def __init__(self, values: tuple[int, ...] = ()) -> None:
        self._table = array("Q", [0]) * 64
        self._count = 0
        for value in values:
            self.add(value)

    def __len__(self) -> int:
        return self._count

    def _slot(self, value: int) -> int:
        table, mask = self._table, len(self._table) - 1
        at = value & mask
        while table[at] and table[at] != value:
            at = (at + 1) & mask
        return at

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        value = value or 1
        return self._table[self._slot(value)] == value

    def add(self, value: int) -> None:
        value = value or 1
        at = self._slot(value)
        if self._table[at] != value:
            self._table[at] = value
            self._count += 1
            if 2 * self._count > len(self._table):
                old, self._table = self._table, array("Q", [0]) * (2 * len(self._table))
                for kept in old:
                    if kept:
                        self._table[self._slot(kept)] = kept
