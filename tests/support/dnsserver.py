"""A real DNS server on 127.0.0.1 for tests, answering from a script.

``ScriptedDNS`` listens on a free UDP port of 127.0.0.1 (twisted.names) and
answers A and AAAA queries from ``answer(name, [addresses], ...)``: successive
answers (an A query moves to the next), the last one repeating, each with the
TTL given to ``answer``, so a name can "rebind" between two lookups the way an
attacker's DNS would; a name not in the script is NXDOMAIN. Every query is recorded
(``queries(name)`` counts the A queries).

``ScriptedDNS.resolver`` is a ``PinnedResolver`` over it: connections resolve
through ``NamesResolver`` (addresses only), and the guard's lookups ask the
server for records (``records=``), so they carry the TTL. Its clock is
``ScriptedDNS.clock``, a fake one (``twisted.internet.task.Clock``) the test
advances to make an answer expire.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from scrapy.resolver import HostResolution
from twisted.internet import defer, reactor, task
from twisted.internet.address import IPv4Address
from twisted.internet.interfaces import IHostnameResolver
from twisted.names import client, common, dns
from twisted.names import error as dns_error
from twisted.names import server as dns_server
from zope.interface import implementer

from traverse_crawl.egress.resolver import PinnedResolver


class ScriptedAuthority(common.ResolverBase):
    """Answers A queries from a script: name -> successive answers (the last one repeats).

    A name not in the script is NXDOMAIN. Every query is recorded as (name, type).
    """

    def __init__(self) -> None:
        super().__init__()
        self.script: dict[str, list[list[str]]] = {}
        self.ttls: dict[str, int] = {}
        self.silent: set[str] = set()  # names that never get an answer
        self.queries: list[tuple[str, int]] = []

    def _lookup(self, name: Any, cls: int, qtype: int, timeout: Any) -> defer.Deferred[Any]:
        text = name.decode("ascii") if isinstance(name, bytes) else str(name)
        self.queries.append((text, qtype))
        if text in self.silent:
            return defer.Deferred()
        answers = self.script.get(text)
        if answers is None:
            return defer.fail(dns_error.DomainError(text))
        if qtype not in (dns.A, dns.AAAA):
            return defer.succeed(([], [], []))
        # An answer's IPv4 addresses answer A, its IPv6 ones AAAA; only A moves the script on.
        current = answers.pop(0) if len(answers) > 1 and qtype == dns.A else answers[0]
        ttl = self.ttls.get(text, 0)
        records = [
            dns.RRHeader(text, qtype, ttl=ttl, payload=payload(a, ttl), auth=True)
            for a in current
            if (":" in a) == (qtype == dns.AAAA)
        ]
        return defer.succeed((records, [], []))


def payload(address: str, ttl: int) -> Any:
    return dns.Record_AAAA(address, ttl=ttl) if ":" in address else dns.Record_A(address, ttl=ttl)


@implementer(IHostnameResolver)
class NamesResolver:
    """An ``IHostnameResolver`` that asks only the scripted DNS server (A records)."""

    def __init__(self, names: client.Resolver) -> None:
        self.client = names

    def resolveHostName(
        self,
        resolutionReceiver: Any,
        hostName: str,
        portNumber: int = 0,
        addressTypes: Any = None,
        transportSemantics: str = "TCP",
    ) -> Any:
        resolution = HostResolution(hostName)
        resolutionReceiver.resolutionBegan(resolution)

        def got(result: Any) -> None:
            for record in result[0]:
                if record.type == dns.A:
                    address = IPv4Address("TCP", record.payload.dottedQuad(), portNumber)
                    resolutionReceiver.addressResolved(address)

        d = self.client.lookupAddress(hostName)
        d.addCallbacks(got, lambda failure: None)
        d.addBoth(lambda _: resolutionReceiver.resolutionComplete())
        return resolution


class ScriptedDNS:
    def __init__(self, with_ttl: bool = True) -> None:
        self.authority = ScriptedAuthority()
        factory = dns_server.DNSServerFactory(authorities=[self.authority])
        self.port = reactor.listenUDP(0, dns.DNSDatagramProtocol(factory), interface="127.0.0.1")
        names = client.Resolver(servers=[("127.0.0.1", self.port.getHost().port)], timeout=(2,))
        self.clock = task.Clock()
        self.resolver = PinnedResolver(
            reactor,
            underlying=NamesResolver(names),
            records=names if with_ttl else None,
            clock=self.clock.seconds,
        )

    def answer(self, name: str, *answers: list[str], ttl: int = 0) -> None:
        self.authority.script[name] = list(answers)
        self.authority.ttls[name] = ttl

    def queries(self, name: str) -> int:
        """A queries the server received for ``name``."""
        return self.authority.queries.count((name, dns.A))

    def stop(self) -> None:
        self.port.stopListening()


def installed(fake: ScriptedDNS) -> Iterator[ScriptedDNS]:
    """For a fixture: ``fake``'s resolver on the reactor until the test ends.

    The egress guard finds this resolver installed and uses it, for its own
    lookups (through the DNS server) and for pinning.
    """
    previous = reactor.installNameResolver(fake.resolver)
    try:
        yield fake
    finally:
        reactor.installNameResolver(previous)
        fake.stop()
