"""A fault-injecting proxy on loopback, in front of a real server (redis-server, moto).

``FaultProxy(target_port)`` forwards TCP byte streams (Redis); with ``http=True`` it
reads each HTTP/1.1 request whole and forwards it on a connection of its own, so it can
answer one request with a 500 instead (an S3 endpoint). ``fault(kind, seconds)`` puts it
in one fault for that long, then it heals by itself:

- ``cut``: every open connection is reset, and every new one is reset at once;
- ``blackhole``: connections are accepted and what is sent is never answered; when the
  fault ends the held connections are reset (as a network partition that heals: the
  client's call fails and is retried);
- ``error`` (``http`` only): every request is answered ``500 InternalError`` and closed;
- ``slow``: every request (``http``) or every chunk sent to the server waits ``delay``
  seconds first.

A later fault replaces the one in force. ``counts`` says how many requests (or chunks)
each fault touched. Only loopback: the proxy listens on 127.0.0.1 and connects there.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections import Counter

KINDS = ("cut", "blackhole", "error", "slow")
HEAD_LIMIT = 64 * 1024  # bytes: a request or response head longer than this is cut
ERROR_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code>'
    b"<Message>We encountered an internal error. Please try again.</Message></Error>"
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def reset(sock: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a cut network or a dead peer looks."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class _Closed(Exception):
    """The peer closed, or sent more than a head may hold."""


class _Reader:
    """Buffered reads of one socket: a head up to its blank line, exact lengths, chunks."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise _Closed
        self.buffer += data

    def head(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > HEAD_LIMIT:
                raise _Closed
            self._fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        return head + b"\r\n\r\n"

    def exactly(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            if len(self.buffer) > HEAD_LIMIT:
                raise _Closed
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line + b"\r\n"

    def chunked(self) -> bytes:
        """A chunked body, as sent (sizes, data, trailers)."""
        out = b""
        while True:
            size_line = self.line()
            out += size_line
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, up to the blank line
                    trailer = self.line()
                    out += trailer
                    if trailer == b"\r\n":
                        return out
            out += self.exactly(size + 2)

    def rest(self) -> bytes:
        data, self.buffer = self.buffer, b""
        return data


def _headers(head: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    lines = head.split(b"\r\n")
    fields: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return lines[0], fields


def _rewrite(head: bytes, drop: tuple[bytes, ...], add: bytes) -> bytes:
    """``head`` without the fields named in ``drop`` (lower case), with ``add`` appended."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [
        line for line in lines[1:] if line.partition(b":")[0].strip().lower() not in drop
    ]
    return b"\r\n".join([*kept, add]) + b"\r\n\r\n"


class FaultProxy:
    """A proxy on a free loopback port to ``target_port`` (see the module's docstring)."""

    def __init__(self, target_port: int, http: bool = False) -> None:
        self.target_port = target_port
        self.http = http
        self.port = free_port()
        self.counts: Counter[str] = Counter()
        self._cond = threading.Condition()
        self._kind = ""  # the fault in force, "" for none
        self._until = 0.0  # time.monotonic() when it ends
        self._delay = 0.0
        self._generation = 0
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        """Close the listener and every connection (the end of a campaign)."""
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        self.heal()
        self._reset_all()

    # -- faults -----------------------------------------------------------------------

    def fault(self, kind: str, seconds: float, delay: float = 0.0) -> None:
        """Put the proxy in fault ``kind`` for ``seconds``; it heals by itself."""
        if kind not in KINDS or (kind == "error" and not self.http):
            raise ValueError(f"not a fault of this proxy: {kind!r}")
        with self._cond:
            self._generation += 1
            generation = self._generation
            self._kind, self._until, self._delay = kind, time.monotonic() + seconds, delay
            self._cond.notify_all()
        if kind == "cut":
            self._reset_all()
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
            self._reset_all()  # what was held fails now, and is retried

    def kind(self) -> str:
        with self._cond:
            return self._kind

    def _hold(self) -> None:
        """Wait while a blackhole is in force."""
        with self._cond:
            while self._kind == "blackhole":
                self._cond.wait(0.5)

    def _reset_all(self) -> None:
        with self._cond:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            reset(sock)

    def _track(self, *socks: socket.socket) -> None:
        with self._cond:
            self._sockets.update(socks)

    def _untrack(self, *socks: socket.socket) -> None:
        with self._cond:
            self._sockets.difference_update(socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.close()

    # -- forwarding -------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            kind = self.kind()
            if kind == "cut":
                self.counts["cut"] += 1
                reset(client)
                continue
            self._track(client)
            target = self._serve_http if self.http else self._serve_tcp
            threading.Thread(target=target, args=(client,), daemon=True).start()

    def _connect(self) -> socket.socket | None:
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
        except OSError:
            return None
        upstream.settimeout(None)
        self._track(upstream)
        return upstream

    def _serve_tcp(self, client: socket.socket) -> None:
        if self.kind() == "blackhole":
            self.counts["blackhole"] += 1
            self._hold()
            self._untrack(client)
            reset(client)
            return
        upstream = self._connect()
        if upstream is None:
            self._untrack(client)
            reset(client)
            return
        threading.Thread(target=self._pipe, args=(upstream, client, False), daemon=True).start()
        self._pipe(client, upstream, True)

    def _pipe(self, source: socket.socket, target: socket.socket, outbound: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                kind = self.kind()
                if kind == "blackhole":
                    self.counts["blackhole"] += 1
                    self._hold()
                    break  # the held bytes are dropped: both ends are reset
                if kind == "slow" and outbound:
                    self.counts["slow"] += 1
                    time.sleep(self._delay)
                target.sendall(data)
        self._untrack(source, target)

    def _serve_http(self, client: socket.socket) -> None:
        reader = _Reader(client)
        try:
            while True:
                if not self._one_request(client, reader):
                    break
        except (OSError, _Closed, ValueError):
            pass
        self._untrack(client)

    def _one_request(self, client: socket.socket, reader: _Reader) -> bool:
        """Serve one request; False when the client connection is done."""
        head = reader.head()
        request_line, fields = _headers(head)
        expects = fields.get(b"expect", b"").lower() == b"100-continue"
        kind = self.kind()
        if kind == "error" and expects:  # a final answer instead of 100 Continue
            self._answer_500(client)
            return False
        if expects:
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
            body = reader.chunked()
        else:
            body = reader.exactly(int(fields.get(b"content-length", b"0") or 0))
        kind = self.kind()
        if kind == "cut":
            self.counts["cut"] += 1
            reset(client)
            return False
        if kind == "blackhole":
            self.counts["blackhole"] += 1
            self._hold()
            reset(client)
            return False
        if kind == "error":
            self._answer_500(client)
            return False
        if kind == "slow":
            self.counts["slow"] += 1
            time.sleep(self._delay)
        upstream = self._connect()
        if upstream is None:
            reset(client)
            return False
        try:
            sent = _rewrite(head, (b"connection", b"expect", b"keep-alive"), b"Connection: close")
            upstream.sendall(sent + body)
            self._relay_response(upstream, client, request_line.startswith(b"HEAD "))
        finally:
            self._untrack(upstream)
        self.counts["forwarded"] += 1
        return False  # one request per client connection: the answer says Connection: close

    def _relay_response(
        self, upstream: socket.socket, client: socket.socket, head_only: bool
    ) -> None:
        reader = _Reader(upstream)
        while True:
            head = reader.head()
            status_line, fields = _headers(head)
            parts = status_line.split(b" ", 2)
            status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            if 100 <= status < 200:
                continue  # an interim answer: the client had its 100 Continue from us
            break
        client.sendall(_rewrite(head, (b"connection", b"keep-alive"), b"Connection: close"))
        if head_only or status in (204, 304):
            return
        if b"content-length" in fields:
            client.sendall(reader.exactly(int(fields[b"content-length"])))
            return
        client.sendall(reader.rest())
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                client.sendall(data)

    def _answer_500(self, client: socket.socket) -> None:
        self.counts["error"] += 1
        head = (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/xml\r\n"
            + f"Content-Length: {len(ERROR_BODY)}\r\n".encode()
            + b"Connection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):
            client.sendall(head + ERROR_BODY)
            client.shutdown(socket.SHUT_WR)
