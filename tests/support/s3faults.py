"""A ``Relay`` in front of the S3 server that injects faults into the requests it picks.

``FaultRelay(port, pick)``: for each connection, the first bytes the client sends (the
request line and headers) go to ``pick(head)``, which names a fault or returns None to
relay the request as is. moto answers ``Connection: close``, so one connection carries
one request. Faults: ``"500"`` (an S3 ``InternalError`` answer), ``"cut"`` (the
connection closed with no answer), ``"blackhole"`` (never answered, never closed) and
``"corrupt"`` (the answer relayed with ``corrupt``'s bytes changed, same length: its
checksum no longer matches). ``picked`` counts the requests given each fault.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
from collections.abc import Callable

from tests.support.s3server import Relay

_ERROR_BODY = (
    b"<?xml version='1.0' encoding='UTF-8'?><Error><Code>InternalError</Code>"
    b"<Message>injected</Message></Error>"
)
INTERNAL_ERROR = (
    b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_ERROR_BODY), _ERROR_BODY)
)


class FaultRelay(Relay):
    def __init__(
        self,
        target_port: int,
        pick: Callable[[bytes], str | None],
        corrupt: tuple[bytes, bytes] = (b"", b""),
    ) -> None:
        super().__init__(target_port)
        self.pick = pick
        self.corrupt = corrupt
        self.picked: collections.Counter[str] = collections.Counter()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self.lock:
                self.sockets.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            head = client.recv(65536)
        except OSError:
            return
        fault = self.pick(head) if head else None
        if fault is not None:
            with self.lock:
                self.picked[fault] += 1
        if fault == "blackhole":
            return  # held open until ``stop``
        if fault in ("500", "cut"):
            with contextlib.suppress(OSError):
                if fault == "500":
                    client.sendall(INTERNAL_ERROR)
                client.shutdown(socket.SHUT_RDWR)
            client.close()
            return
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            upstream.sendall(head)
        except OSError:
            client.close()
            return
        with self.lock:
            self.sockets.append(upstream)
        threading.Thread(target=self._pipe, args=(client, upstream, None), daemon=True).start()
        self._answer(upstream, client, fault == "corrupt")

    def _answer(self, upstream: socket.socket, client: socket.socket, corrupt: bool) -> None:
        old, new = self.corrupt
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if corrupt and old:
                    data = data.replace(old, new)
                client.sendall(data)
        for sock in (upstream, client):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
