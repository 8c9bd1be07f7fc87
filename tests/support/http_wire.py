"""HTTP/1.1 on the wire, for the fault proxy (tests/support/fault_proxy.py): a request's
or an answer's head read up to its blank line, its body by Content-Length or chunks (as
sent), and a head's fields read or rewritten (RFC 9112 §2, §6, §7.1)."""

from __future__ import annotations

import socket

HEAD_LIMIT = 64 * 1024  # bytes: a request or response head longer than this is cut


class Closed(Exception):
    """The peer closed, or sent more than a head may hold."""


class Reader:
    """Buffered reads of one socket: a head up to its blank line, exact lengths, chunks."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise Closed
        self.buffer += data

    def head(self) -> bytes:
        while b"\r\n\r\n" not in self.buffer:
            if len(self.buffer) > HEAD_LIMIT:
                raise Closed
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
                raise Closed
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


def headers(head: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    lines = head.split(b"\r\n")
    fields: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if sep:
            fields[name.strip().lower()] = value.strip()
    return lines[0], fields


def rewrite(head: bytes, drop: tuple[bytes, ...], add: bytes) -> bytes:
    """``head`` without the fields named in ``drop`` (lower case), with ``add`` appended."""
    lines = head[:-4].split(b"\r\n")
    kept = [lines[0]] + [
        line for line in lines[1:] if line.partition(b":")[0].strip().lower() not in drop
    ]
    return b"\r\n".join([*kept, add]) + b"\r\n\r\n"
