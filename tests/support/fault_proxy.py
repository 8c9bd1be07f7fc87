"""A fault-injecting proxy on loopback, in front of a real server (redis-server, moto).

``FaultProxy(target_port)`` forwards TCP byte streams (Redis); with ``http=True`` it
reads each HTTP/1.1 request whole and forwards it on a connection of its own, so it can
answer one request with a 500 instead (an S3 endpoint). It is a ``Relay``
(tests/support/relay.py) that injects faults, of these kinds:

- ``cut``: the connection is reset (TCP RST), with no answer;
- ``blackhole``: what is sent is never answered;
- ``error`` (``http`` only): the request is answered ``500 InternalError`` and closed;
- ``slow``: the request (``http``) or the chunk sent to the server waits ``delay``
  seconds first;
- ``corrupt`` (``http`` only): the answer is relayed with the bytes ``corrupt[0]``
  replaced by ``corrupt[1]`` (same length, so its Content-Length holds and its checksum
  fails).

Two ways to choose them, which a proxy may mix:

- ``fault(kind, seconds)`` puts the proxy in one fault for every request (connection,
  chunk) for that long, then it heals by itself: a ``cut`` also resets every open
  connection, a ``blackhole`` resets the connections it held when it ends (as a network
  partition that heals: the client's call fails and is retried). A later fault replaces
  the one in force.
- ``pick(head)`` (``http`` only), when given, is called with each request's head (its
  request line and header fields) and names the fault for that request alone, or returns
  None to leave it to the fault in force. A picked ``blackhole`` holds its connection
  until ``stop``.

``counts`` says how many requests (or connections, chunks) each fault touched, and
``counts["forwarded"]`` how many requests were forwarded. Only loopback: the proxy listens on
127.0.0.1 and connects there.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable

from tests.support.http_wire import Closed, Reader, headers, rewrite
from tests.support.relay import Relay, reset

KINDS = ("cut", "blackhole", "error", "slow", "corrupt")
HTTP_ONLY = ("error", "corrupt")
ERROR_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>injected by the fault proxy</Message></Error>"
)


class FaultProxy(Relay):
    """A proxy on a free loopback port to ``target_port`` (see the module's docstring)."""

    def __init__(
        self,
        target_port: int,
        http: bool = False,
        pick: Callable[[bytes], str | None] | None = None,
        corrupt: tuple[bytes, bytes] = (b"", b""),
    ) -> None:
        if pick is not None and not http:
            raise ValueError("pick chooses the faults of HTTP requests: give http=True")
        if len(corrupt[0]) != len(corrupt[1]):
            raise ValueError(f"corrupt replaces bytes with as many: {corrupt!r}")
        super().__init__(target_port)
        self.http = http
        self.pick = pick
        self.corrupt = corrupt
        self.counts: Counter[str] = Counter()
        self._cond = threading.Condition()
        self._kind = ""  # the fault in force, "" for none
        self._until = 0.0  # time.monotonic() when it ends
        self._delay = 0.0
        self._generation = 0
        self._stopped = False
        self._misuse = ""  # what a pick named that is no fault of this proxy

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        with self._cond:
            self._stopped = False
        super().start()

    def stop(self) -> None:
        """Close the listener and every connection, held ones too; a ``pick`` that named
        no fault of this proxy fails here, so its test does."""
        with self._cond:
            self._stopped = True
        self.heal()
        super().stop()
        if self._misuse:
            raise ValueError(self._misuse)

    # -- faults -----------------------------------------------------------------------

    def _check(self, kind: str) -> None:
        if kind not in KINDS or (kind in HTTP_ONLY and not self.http):
            raise ValueError(f"not a fault of this proxy: {kind!r}")
        if kind == "corrupt" and not self.corrupt[0]:
            raise ValueError("corrupt needs the bytes to replace: give corrupt=(old, new)")

    def fault(self, kind: str, seconds: float, delay: float = 0.0) -> None:
        """Put the proxy in fault ``kind`` for ``seconds``; it heals by itself."""
        self._check(kind)
        with self._cond:
            self._generation += 1
            generation = self._generation
            self._kind, self._until, self._delay = kind, time.monotonic() + seconds, delay
            self._cond.notify_all()
        if kind == "cut":
            self._close_all(reset)
        timer = threading.Timer(seconds, self._end, args=(generation,))
        timer.daemon = True
        timer.start()

    def heal(self) -> None:
        with self._cond:
            self._generation += 1
            self._kind = ""
            self._cond.notify_all()

    def _end(self, generation: int) -> None:
        with self._cond:
            if generation != self._generation:
                return  # a later fault replaced this one
            was = self._kind
            self._kind = ""
            self._cond.notify_all()
        if was == "blackhole":
            self._close_all(reset)  # what was held fails now, and is retried

    def kind(self) -> str:
        with self._cond:
            return self._kind

    def _picked(self, head: bytes) -> str:
        """The fault ``pick`` names for the request with ``head``, "" for none."""
        fault = self.pick(head) if self.pick is not None else None
        if fault is None:
            return ""
        try:
            self._check(fault)
            if fault == "slow":
                raise ValueError("slow is not picked: a pick that sleeps makes a request slow")
        except ValueError as error:
            self._misuse = f"pick named {fault!r}: {error}"
            raise
        return fault

    def _count(self, kind: str) -> None:
        with self._cond:
            self.counts[kind] += 1

    def _hold(self, picked: bool = False) -> None:
        """Wait while a blackhole is in force, or (``picked``) until ``stop``."""
        with self._cond:
            while not self._stopped and (picked or self._kind == "blackhole"):
                self._cond.wait(0.5)

    # -- TCP --------------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        if self.kind() == "cut":
            self._count("cut")
            self._release(client, how=reset)
            return
        if self.http:
            self._serve_http(client)
            return
        if self.kind() == "blackhole":
            self._count("blackhole")
            self._hold()
            self._release(client, how=reset)
            return
        upstream = self._connect()
        if upstream is None:
            self._release(client, how=reset)
            return
        threading.Thread(
            target=self._pipe, args=(upstream, client, self._inbound), daemon=True
        ).start()
        self._pipe(client, upstream, self._outbound)

    def _inbound(self, data: bytes) -> bool:
        if self.kind() == "blackhole":
            self._count("blackhole")
            self._hold()
            return False  # the held bytes are dropped: both ends are reset
        return True

    def _outbound(self, data: bytes) -> bool:
        if not self._inbound(data):
            return False
        if self.kind() == "slow":
            self._count("slow")
            time.sleep(self._delay)
        return True

    # -- HTTP -------------------------------------------------------------------------

    def _serve_http(self, client: socket.socket) -> None:
        """One request per client connection: the answer says Connection: close."""
        with contextlib.suppress(OSError, Closed, ValueError):
            self._one_request(client, Reader(client))
        self._release(client)

    def _one_request(self, client: socket.socket, reader: Reader) -> None:
        head = reader.head()
        request_line, fields = headers(head)
        picked = self._picked(head)
        expects = fields.get(b"expect", b"").lower() == b"100-continue"
        if (picked or self.kind()) == "error" and expects:  # a final answer, not 100 Continue
            self._answer_500(client)
            return
        if expects:
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            body = reader.chunked()
        else:
            body = reader.exactly(int(fields.get(b"content-length", b"0") or 0))
        kind = picked or self.kind()
        if kind == "cut":
            self._count("cut")
            reset(client)
            return
        if kind == "blackhole":
            self._count("blackhole")
            self._hold(picked=bool(picked))
            reset(client)
            return
        if kind == "error":
            self._answer_500(client)
            return
        if kind == "slow":
            self._count("slow")
            time.sleep(self._delay)
        upstream = self._connect()
        if upstream is None:
            reset(client)
            return
        if kind == "corrupt":
            self._count("corrupt")
        try:
            sent = rewrite(head, (b"connection", b"expect", b"keep-alive"), b"Connection: close")
            upstream.sendall(sent + body)
            self._relay_response(
                upstream, client, request_line.startswith(b"HEAD "), kind == "corrupt"
            )
        finally:
            self._release(upstream)
        self._count("forwarded")

    def _relay_response(
        self, upstream: socket.socket, client: socket.socket, head_only: bool, corrupt: bool
    ) -> None:
        old, new = self.corrupt if corrupt else (b"", b"")

        def relayed(data: bytes) -> bytes:
            return data.replace(old, new) if old else data

        reader = Reader(upstream)
        while True:
            head = reader.head()
            status_line, fields = headers(head)
            parts = status_line.split(b" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            if 100 <= status < 200:
                continue  # an interim answer: the client had its 100 Continue from us
            break
        client.sendall(rewrite(head, (b"connection", b"keep-alive"), b"Connection: close"))
        if head_only or status in (204, 304):
            return
        if b"content-length" in fields:
            client.sendall(relayed(reader.exactly(int(fields[b"content-length"]))))
            return
        client.sendall(relayed(reader.rest()))
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                client.sendall(relayed(data))

    def _answer_500(self, client: socket.socket) -> None:
        self._count("error")
        head = (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n"
            + f"Content-Length: {len(ERROR_BODY)}\r\n".encode()
            + b"Connection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            client.sendall(head + ERROR_BODY)
            client.shutdown(socket.SHUT_WR)
