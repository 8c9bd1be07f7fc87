"""A real HTTP server on 127.0.0.1 for tests: routes, hit log with timestamps.

A route is a callable ``(handler) -> Reply`` or a static ``Reply``; ``fallback``
answers a path no route names. Every request, of any method, is recorded (path
with query, the request target exactly as sent, monotonic start and end time,
headers, method and body) so tests can assert what reached the server, and when.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str | None = "text/html; charset=utf-8"
    delay: float = 0.0  # before the headers
    chunks: list[bytes] | None = None  # streamed with chunk_delay between them
    chunk_delay: float = 0.0


@dataclass
class Hit:
    path: str
    start: float
    end: float
    headers: dict[str, str]
    # The request line's target as sent (``path`` is http.server's reading of
    # it, which collapses a leading "//").
    target: str = ""
    method: str = "GET"
    body: bytes = b""  # the request's body, read by its Content-Length


Route = Reply | Callable[["Handler"], Reply]


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        start = time.monotonic()
        target = self.requestline.split(" ")[1] if " " in self.requestline else ""
        length = int(self.headers.get("Content-Length") or 0)
        sent = self.rfile.read(length) if length > 0 else b""
        hit = Hit(
            self.path, start, start, {k: v for k, v in self.headers.items()}, target,
            self.command, sent,
        )  # fmt: skip
        self.request_body = sent
        with self.server.lock:
            self.server.started.append(self.path)
        route = self.server.routes.get(self.path)
        if route is None:
            route = self.server.routes.get(self.path.split("?", 1)[0])
        if route is None:
            route = self.server.fallback
        if route is None:
            reply = Reply(404, b"not found", content_type="text/plain")
        elif isinstance(route, Reply):
            reply = route
        else:
            reply = route(self)
        try:
            if reply.delay:
                time.sleep(reply.delay)
            body = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
            self.send_response(reply.status)
            if reply.content_type:
                self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.chunks is not None:
                total = sum(len(c) for c in reply.chunks)
                self.send_header("Content-Length", str(total))
                self.end_headers()
                for chunk in reply.chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
                    time.sleep(reply.chunk_delay)
            else:
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            hit.end = time.monotonic()
            with self.server.lock:
                self.server.hits.append(hit)

    # Every method is answered by the same routes; the hit records which it was.
    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET


class Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's listen backlog is 5: a crawl opening 16 connections at once
    # while this process is slow to accept (a loaded machine) had the kernel drop
    # the extra SYNs, and those requests arrived a second late (TCP's retry).
    request_queue_size = 128

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), Handler)
        self.routes: dict[str, Route] = {}
        self.fallback: Route | None = None
        self.hits: list[Hit] = []  # logged when answered
        self.started: list[str] = []  # paths, logged when the request arrives
        self.lock = threading.Lock()

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that went away (a killed crawl) is not the server's error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]

    @property
    def origin(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)  # an AF_INET server's address
        return f"http://{host}" if port == 80 else f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.origin + path

    def paths(self) -> list[str]:
        with self.lock:
            return [h.path for h in self.hits]

    def count(self, path: str) -> int:
        return self.paths().count(path)

    def site(self, pages: dict[str, str | Reply]) -> None:
        for path, page in pages.items():
            self.routes[path] = page if isinstance(page, Reply) else Reply(body=page)


def serve(host: str = "127.0.0.1", port: int = 0) -> Iterator[Server]:
    yield from run(Server(host, port))


def run(server: Server) -> Iterator[Server]:
    """Run ``server`` in a thread until the test ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
