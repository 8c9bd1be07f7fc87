"""A TCP forwarder on loopback, in front of a real server (moto, redis-server).

``Relay(target_port)`` listens on a free port of 127.0.0.1 and forwards each connection's
bytes both ways to ``target_port`` there. ``stop`` closes the listener and every
connection (the endpoint refuses), ``start`` opens it again on the same port. ``hold(data)``,
when given, is called with each chunk a client sends before it is forwarded: it may sleep,
to make the endpoint slow. The fault proxy (tests/support/fault_proxy.py) builds on it:
it tracks the same sockets, serves each connection on its own thread and pipes the same way.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable

from tests.support.scrapyd_harness import free_port


def reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a cut network or a dead peer looks."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


def close(sock: socket.socket) -> None:
    """Close at once: ``shutdown`` wakes a thread blocked in ``recv`` on it; ``close``
    alone does not."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class Relay:
    """A TCP forwarder on a free loopback port to ``target_port`` (see the module's
    docstring)."""

    def __init__(self, target_port: int, hold: Callable[[bytes], None] | None = None) -> None:
        self.target_port = target_port
        self.hold = hold
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Close the listener (the port refuses) and every connection."""
        if self._listener is not None:
            close(self._listener)  # shutdown wakes the thread blocked in accept()
            self._listener = None
        self._close_all(close)

    # -- for subclasses ----------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        """Serve one accepted connection, on a thread of its own."""
        upstream = self._connect()
        if upstream is None:
            self._release(client)
            return
        threading.Thread(target=self._pipe, args=(upstream, client, None), daemon=True).start()
        self._pipe(client, upstream, self._outbound)

    def _outbound(self, data: bytes) -> bool:
        """Called with each chunk a client sends, before it is forwarded; False drops it
        and ends the connection."""
        if self.hold is not None:
            self.hold(data)
        return True

    def _connect(self) -> socket.socket | None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            return None
        upstream.settimeout(None)
        self._track(upstream)
        return upstream

    def _pipe(
        self,
        source: socket.socket,
        target: socket.socket,
        each: Callable[[bytes], bool] | None,
    ) -> None:
        """Forward ``source``'s bytes to ``target`` until either end closes (or ``each``
        says to stop), then close both: one direction's end is the connection's."""
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if each is not None and not each(data):
                    break
                target.sendall(data)
        self._release(source, target)

    def _track(self, *socks: socket.socket) -> None:
        with self._lock:
            self._sockets.update(socks)

    def _release(self, *socks: socket.socket, how: Callable[[socket.socket], None] = close) -> None:
        with self._lock:
            self._sockets.difference_update(socks)
        for sock in socks:
            how(sock)

    def _close_all(self, how: Callable[[socket.socket], None]) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            how(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            self._track(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()
