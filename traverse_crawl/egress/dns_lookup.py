"""The egress guard's lookups through the resolver ``PinnedResolver`` wraps.

``lookup_addresses``: every address from an ``IHostnameResolver`` (Twisted's
``getaddrinfo`` resolver by default), with no TTL. ``lookup_records``: a host's
addresses with their TTL, from a twisted.names resolver (``IResolver``), whose
answers the guard then keeps that long (``egress/dns_cache.py``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.interfaces import IAddress, IResolutionReceiver
from zope.interface import implementer

from traverse_crawl.egress.dns_cache import Answer


def host_of(address: IAddress) -> str:
    return str(getattr(address, "host", ""))


@implementer(IResolutionReceiver)
class Collector:
    """Buffers an underlying resolution, then hands it to ``done``."""

    def __init__(self, done: Callable[[list[IAddress]], None]) -> None:
        self.done = done
        self.addresses: list[IAddress] = []

    def resolutionBegan(self, resolutionInProgress: Any) -> None:
        pass

    def addressResolved(self, address: IAddress) -> None:
        self.addresses.append(address)

    def resolutionComplete(self) -> None:
        self.done(self.addresses)


def lookup_addresses(resolver: Any, host: str, port: int) -> Deferred[Answer]:
    """Every address ``resolver`` (an ``IHostnameResolver``) gives ``host``; TTL unknown."""
    result: Deferred[Answer] = Deferred()

    def done(found: list[IAddress]) -> None:
        result.callback(Answer(tuple(dict.fromkeys(host_of(a) for a in found))))

    resolver.resolveHostName(Collector(done), host, port)
    return result


def lookup_records(resolver: Any, host: str) -> Deferred[Answer]:
    """Ask ``resolver`` (an ``IResolver``) for A and AAAA records of ``host``, at once.

    The TTL is the smallest of the answer section's A, AAAA and CNAME records (a
    CNAME chain lives as long as its shortest link). A failed or empty query
    contributes nothing; both failing gives no address, which the guard reports
    as a DNS failure like any other.
    """
    queries: list[Deferred[Any]] = [
        resolver.lookupAddress(host),
        resolver.lookupIPV6Address(host),
    ]
    both: Deferred[Any] = DeferredList(queries, consumeErrors=True)
    return both.addCallback(_answer)


def _answer(results: list[tuple[bool, Any]]) -> Answer:
    # twisted.names only once a resolver of its kind has answered: a crawl with the
    # system resolver never imports it (about 6 ms of every start-up).
    from twisted.names import dns

    kinds = (dns.A, dns.AAAA, dns.CNAME)
    addresses: dict[str, None] = {}
    ttls: list[float] = []
    for ok, result in results:
        if not ok:
            continue
        for record in result[0]:
            if record.type not in kinds:
                continue
            ttls.append(float(record.ttl))
            if record.type == dns.A:
                addresses.setdefault(record.payload.dottedQuad(), None)
            elif record.type == dns.AAAA:
                text = socket.inet_ntop(socket.AF_INET6, record.payload.address)
                addresses.setdefault(text, None)
    return Answer(tuple(addresses), min(ttls) if addresses and ttls else None)
