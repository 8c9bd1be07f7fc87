"""Serve the bundled demo site on 127.0.0.1 (a free port), with one redirect."""

from __future__ import annotations

import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any

REDIRECTS = {"/old-catalog.html": "/catalog.html"}


class DemoHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        target = REDIRECTS.get(self.path)
        if target is not None:
            self.send_response(301)
            self.send_header("Location", target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        super().do_GET()


class DemoServer:
    """``with DemoServer() as origin:`` serves the site until the block ends."""

    def __init__(self) -> None:
        directory = str(files("traverse_crawl.demo") / "site")
        handler = partial(DemoHandler, directory=directory)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> str:
        self.thread.start()
        return self.origin

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
