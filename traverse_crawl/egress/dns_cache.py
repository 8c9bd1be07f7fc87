"""How long the egress guard keeps a DNS answer, and the bounded table that keeps it.

The guard (``egress/middleware.py``) used to resolve a host name again
for every request, redirect hop and retry. It now keeps each answer for a bounded
lifetime per crawl (``AnswerCache``) and resolves again only after it expires. The
addresses are still *checked* on every request (``core.egress.evaluate``
classifies them each time; that costs no I/O), and pinned for the connection, so
a cached answer never lets a non-public address through, and a redirect to
another host looks up (or reuses) *that* host's answer and checks it.

Lifetime (``lifetime``), in seconds:

- the record's TTL when the resolver reports one (a twisted.names resolver does;
  the system's ``getaddrinfo`` does not),
- ``DEFAULT_TTL`` (60 s) when it reports none: browsers keep an answer about as
  long (Firefox's default ``network.dnsCacheExpiration`` is 60 s),
- at least ``MIN_TTL`` (1 s): a TTL of 0 (the usual rebinding trick, also common
  behind load balancers) would otherwise mean a query per request; one query per
  second per host is cheap, and each answer is checked anyway,
- at most the cap ``TRAVERSE_DNS_TTL_MAX`` (default ``MAX_TTL``, 300 s): a crawl
  runs for hours, and a host that moves (a CDN change, a failover) must be
  followed within minutes rather than at the end of the crawl; 300 s is the
  upper end of the TTLs large sites publish, so most answers keep their own TTL.
  ``0`` keeps nothing: every request resolves again, as before issue 17.

Memory: at most ``LIMIT`` hosts (least recently used out first), about 200 bytes
each, so a crawl of many hosts stays bounded. Pure: no Scrapy or Twisted here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

DEFAULT_TTL = 60.0
MIN_TTL = 1.0
MAX_TTL = 300.0
LIMIT = 10_000


@dataclass(frozen=True)
class Answer:
    """A host's addresses, and the TTL of its records when the resolver gave one."""

    addresses: tuple[str, ...]
    ttl: float | None = None


def lifetime(ttl: float | None, cap: float) -> float:
    """Seconds an answer with ``ttl`` is reused: the TTL within [MIN_TTL, cap]; 0 if cap is 0."""
    if cap <= 0:
        return 0.0
    if ttl is None:
        return min(DEFAULT_TTL, cap)
    return min(cap, max(MIN_TTL, ttl))


class AnswerCache:
    """Answers by host name, each until its lifetime ends; at most ``limit`` hosts.

    Hand-written rather than Scrapy's ``LocalCache`` (first in, first out, and
    core/ imports nothing from Scrapy): an ``OrderedDict`` in least-recently-used
    order, with an expiry time per entry. ``clock`` returns seconds (the reactor's
    ``seconds``; a test can pass a fake clock).
    """

    def __init__(self, cap: float, clock: Callable[[], float], limit: int = LIMIT) -> None:
        self.cap = cap
        self.clock = clock
        self.limit = limit
        self._entries: OrderedDict[str, tuple[tuple[str, ...], float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, host: str) -> tuple[str, ...] | None:
        """The addresses of a live answer for ``host``, or None (never cached, or expired)."""
        entry = self._entries.get(host)
        if entry is None:
            return None
        addresses, expires = entry
        if self.clock() >= expires:
            del self._entries[host]
            return None
        self._entries.move_to_end(host)
        return addresses

    def put(self, host: str, answer: Answer) -> None:
        """Keep ``answer`` for its lifetime; an empty answer (a failed lookup) is not kept."""
        keep = lifetime(answer.ttl, self.cap)
        if keep <= 0 or not answer.addresses:
            return
        self._entries[host] = (answer.addresses, self.clock() + keep)
        self._entries.move_to_end(host)
        while len(self._entries) > self.limit:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()
