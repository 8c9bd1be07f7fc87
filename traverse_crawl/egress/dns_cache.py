"""How long the egress guard keeps a DNS answer, and the bounded table that keeps it.

Each answer is kept for a bounded lifetime per crawl (``lifetime``) and resolved
again only after it expires; the addresses are still checked and pinned on every
request, so a kept answer never lets a non-public address through (docs/egress.md,
"How long an answer is kept"). Pure: no Scrapy or Twisted here.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

# No TTL from the resolver (the system's ``getaddrinfo`` gives none): about what
# browsers keep (Firefox's default ``network.dnsCacheExpiration`` is 60 s).
DEFAULT_TTL = 60.0
# A TTL of 0 (the usual rebinding trick, also common behind load balancers) would
# mean a query per request; one per second per host is cheap, and each answer is
# checked anyway.
MIN_TTL = 1.0
# The default of TRAVERSE_DNS_TTL_MAX: a crawl runs for hours, and a host that moves
# (a CDN change, a failover) must be followed within minutes; 300 s is the upper end
# of the TTLs large sites publish, so most answers keep their own TTL.
MAX_TTL = 300.0
# Hosts kept per crawl (least recently used out first), about 200 bytes each.
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
    this module is pure): an ``OrderedDict`` in least-recently-used
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
