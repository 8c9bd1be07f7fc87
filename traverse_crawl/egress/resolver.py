"""``PinnedResolver``: the reactor's name resolver, so a checked address is the connected one.

The egress guard resolves a host, checks every address and pins them here under
``(host, port)``; Twisted's ``HostnameEndpoint`` asks ``reactor.nameResolver``, and
this resolver answers a pinned ``(host, port)`` with exactly those addresses, so a
name that changes its answer after the check (DNS rebinding) cannot move the
connection. While a guarded crawl runs, unpinned lookups are checked too
(docs/egress.md, "Pinning").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, cast

from scrapy.utils.datatypes import LocalCache
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import (
    IAddress,
    IHostnameResolver,
    IHostResolution,
    IReactorPluggableNameResolver,
    IResolver,
)
from zope.interface import implementer

from traverse_crawl.egress import rules as egress
from traverse_crawl.egress.dns_cache import Answer
from traverse_crawl.egress.dns_lookup import Collector as _Collector
from traverse_crawl.egress.dns_lookup import host_of as _host_of
from traverse_crawl.egress.dns_lookup import lookup_addresses, lookup_records

logger = logging.getLogger(__name__)

PIN_LIMIT = 10000


# zope interfaces do not type-check as protocols without a mypy plugin; these
# mirror IResolutionReceiver and IHostnameResolver for the type checker.
class _Receiver(Protocol):
    def resolutionBegan(self, resolutionInProgress: Any) -> None: ...
    def addressResolved(self, address: IAddress) -> None: ...
    def resolutionComplete(self) -> None: ...


class _NameResolver(Protocol):
    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str,
        portNumber: int = ...,
        addressTypes: Sequence[type[IAddress]] | None = ...,
        transportSemantics: str = ...,
    ) -> Any: ...


@implementer(IHostResolution)
class _Resolution:
    def __init__(self, name: str) -> None:
        self.name = name

    def cancel(self) -> None:
        """Nothing to cancel: the answer is already known or delegated."""


def _address(host: str, port: int) -> IAddress:
    if ":" in host:
        return cast(IAddress, IPv6Address("TCP", host, port))
    return cast(IAddress, IPv4Address("TCP", host, port))


def _with_port(address: IAddress, port: int) -> IAddress:
    return _address(_host_of(address), port)


@implementer(IHostnameResolver)
class PinnedResolver:
    def __init__(
        self,
        reactor: Any,
        underlying: _NameResolver | None = None,
        cache_size: int = 0,
        timeout: float = 60.0,
        records: Any = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.reactor = reactor
        # Seconds for the guard's answer lifetimes: the reactor's; a test may pass a fake.
        self.clock: Callable[[], float] = clock or reactor.seconds
        base = underlying if underlying is not None else reactor.nameResolver
        if records is None and underlying is None:
            # reactor.installResolver(a twisted.names resolver): ask it for records (TTLs).
            simple = getattr(reactor, "resolver", None)
            records = simple if IResolver.providedBy(simple) else None
        # Never delegate to another PinnedResolver: its pins belong to other crawls.
        while isinstance(base, PinnedResolver):
            records = records if records is not None else getattr(base, "records", None)
            base = base.underlying
        self.underlying: _NameResolver = base
        self.records = records  # an IResolver giving TTLs, or None (getaddrinfo gives none)
        self.timeout = timeout
        self._pins: LocalCache[tuple[str, int], tuple[str, ...]] = LocalCache(PIN_LIMIT)
        self._guards: dict[int, frozenset[tuple[str, int]]] = {}
        self._cache: LocalCache[str, list[IAddress]] | None = (
            LocalCache(cache_size) if cache_size > 0 else None
        )
        self._warned: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> PinnedResolver:
        # Scrapy passes the CrawlerProcess here, which has only ``settings``.
        settings = crawler.settings
        size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        return cls(reactor, cache_size=size, timeout=settings.getfloat("DNS_TIMEOUT"))

    def install_on_reactor(self) -> None:
        self.reactor.installNameResolver(self)

    @classmethod
    def ensure_installed(cls, crawler: Any) -> PinnedResolver:
        """The reactor's ``PinnedResolver``, installing one if another resolver is there."""
        from twisted.internet import reactor

        current = getattr(reactor, "nameResolver", None)
        if isinstance(current, cls):
            return current
        if not IReactorPluggableNameResolver.providedBy(reactor):
            raise RuntimeError("the egress guard needs a reactor with a pluggable name resolver")
        resolver = cls.from_crawler(crawler, reactor)
        resolver.install_on_reactor()
        logger.info(
            "egress guard: installed %s.PinnedResolver over %r",
            __name__,
            type(resolver.underlying).__name__,
        )
        return resolver

    # -- guard bookkeeping (one entry per running guarded crawl) ----------------

    def guard(self, owner: object, allowed: Iterable[tuple[str, int]] = ()) -> None:
        self._guards[id(owner)] = frozenset(allowed)

    def release(self, owner: object) -> None:
        self._guards.pop(id(owner), None)
        if not self._guards:
            # Pins are valid only for the crawls that checked them.
            self._pins.clear()

    @property
    def guarded(self) -> bool:
        return bool(self._guards)

    def _allowed(self, key: tuple[str, int]) -> bool:
        return any(key in allowed for allowed in self._guards.values())

    def pin(self, host: str, port: int, addresses: Sequence[str]) -> None:
        key = egress.host_key(host)
        if key is not None and addresses:
            self._pins[(key, port)] = tuple(addresses)

    def pinned(self, host: str, port: int) -> tuple[str, ...] | None:
        key = egress.host_key(host)
        return None if key is None else self._pins.get((key, port))

    # -- lookups --------------------------------------------------------------

    def lookup(self, host: str, port: int, timeout: float | None = None) -> Deferred[Answer]:
        """Every address of ``host`` (and the records' TTL, if known), ignoring pins.

        Fails with ``defer.TimeoutError`` after ``timeout`` (default ``DNS_TIMEOUT``);
        an unknown name gives no address.
        """
        result: Deferred[Answer] = Deferred()

        def done(answer: Answer) -> None:
            if not result.called:
                result.callback(answer)

        if self.records is not None:
            lookup_records(self.records, host).addCallback(done)
        else:
            lookup_addresses(self.underlying, host, port).addCallback(done)
        result.addTimeout(self.timeout if timeout is None else timeout, self.reactor)
        return result

    def resolveHostName(
        self,
        resolutionReceiver: _Receiver,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Sequence[type[IAddress]] | None = None,
        transportSemantics: str = "TCP",
    ) -> _Resolution:
        resolution = _Resolution(hostName)
        key = egress.host_key(hostName)
        pins = self._pins.get((key, portNumber)) if key is not None else None
        if pins is not None:
            resolutionReceiver.resolutionBegan(resolution)
            self._deliver(resolutionReceiver, [_address(h, portNumber) for h in pins], addressTypes)
            return resolution
        if self.guarded and not (key is not None and self._allowed((key, portNumber))):
            return self._checked(
                resolutionReceiver, resolution, hostName, key, portNumber, addressTypes
            )
        if self._cache is not None and hostName in self._cache:
            resolutionReceiver.resolutionBegan(resolution)
            cached = [_with_port(a, portNumber) for a in self._cache[hostName]]
            self._deliver(resolutionReceiver, cached, addressTypes)
            return resolution

        def done(addresses: list[IAddress]) -> None:
            if self._cache is not None and addresses:
                self._cache[hostName] = addresses
            self._deliver(resolutionReceiver, addresses, addressTypes)

        resolutionReceiver.resolutionBegan(resolution)
        self.underlying.resolveHostName(
            _Collector(done), hostName, portNumber, addressTypes, transportSemantics
        )
        return resolution

    def _checked(
        self,
        receiver: _Receiver,
        resolution: _Resolution,
        host_name: str,
        key: str | None,
        port: int,
        address_types: Sequence[type[IAddress]] | None,
    ) -> _Resolution:
        """Resolve a name nobody pinned while guarded; refuse a non-public answer."""
        receiver.resolutionBegan(resolution)
        reason = egress.check_host(key) if key is not None else "not a valid host"
        if reason is not None:
            self._refuse(host_name, f"{host_name} is {reason}")
            receiver.resolutionComplete()
            return resolution

        def done(addresses: list[IAddress]) -> None:
            for address in addresses:
                why = egress.classify_address(_host_of(address))
                if why is not None:
                    self._refuse(host_name, f"{host_name} resolves to {_host_of(address)}, {why}")
                    receiver.resolutionComplete()
                    return
            self._deliver(receiver, addresses, address_types)

        self.underlying.resolveHostName(_Collector(done), host_name, port, address_types)
        return resolution

    def _refuse(self, host_name: str, why: str) -> None:
        # A repeated refusal is logged once; the download fails as a DNS error.
        if host_name not in self._warned:
            self._warned.add(host_name)
            logger.warning("egress guard: refused an unchecked lookup: %s", why)

    @staticmethod
    def _deliver(
        receiver: _Receiver,
        addresses: Iterable[IAddress],
        address_types: Sequence[type[IAddress]] | None,
    ) -> None:
        for address in addresses:
            if address_types is None or any(isinstance(address, t) for t in address_types):
                receiver.addressResolved(address)
        receiver.resolutionComplete()


__all__ = ["PinnedResolver"]
