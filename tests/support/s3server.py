"""A real S3-compatible server on 127.0.0.1 for tests: moto's server mode.

``python -m moto.server`` is started as a process on a free port, waited for until
``GET /`` answers, and killed by its PID when the test ends. moto keeps its objects
in memory, so a test that takes the endpoint away mid-crawl stops a ``Relay`` (a
plain TCP forwarder on loopback in front of the server) rather than the server: the
crawl sees its endpoint refuse connections, and the bucket keeps what it holds.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.scrapyd_harness import free_port

REGION = "us-east-1"
SECRET = "moto-secret-f00d"  # any secret does; tests check it is never printed


class S3Server:
    """One moto server process; ``endpoint`` is what a crawl gets as ``AWS_ENDPOINT_URL``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.buckets = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        log = (self.directory / "moto.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"moto server did not start on port {self.port}")
            time.sleep(0.05)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.endpoint + "/", timeout=1) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.kill()
        self.process.wait(timeout=10)

    def settings(self, endpoint: str | None = None) -> dict[str, str]:
        """The Scrapy settings a crawl or command needs to reach this server."""
        return {
            "AWS_ENDPOINT_URL": endpoint or self.endpoint,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION_NAME": REGION,
        }

    def setting_args(self, endpoint: str | None = None) -> list[str]:
        args: list[str] = []
        for name, value in self.settings(endpoint).items():
            args += ["-s", f"{name}={value}"]
        return args

    def client(self) -> Any:
        """A botocore client of its own, for a test to look into the bucket."""
        import botocore.session

        return botocore.session.get_session().create_client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key=SECRET,
            region_name=REGION,
        )

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def new_bucket(self) -> str:
        """A bucket no other test uses."""
        self.buckets += 1
        name = f"crawls-{self.buckets}"
        self.create_bucket(name)
        return name

    def objects(self, bucket: str, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``: key (without the prefix) → bytes."""
        client = self.client()
        found: dict[str, bytes] = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            for entry in page.get("Contents", []):
                body = client.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
                found[entry["Key"][len(prefix) :]] = body
        return found


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """One server for the whole run (it takes seconds to start); each test makes
    buckets of its own with ``new_bucket``."""
    server = S3Server(tmp_path_factory.mktemp("moto"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


class Relay:
    """A TCP forwarder on a free loopback port to ``target_port``; ``stop`` closes the
    listener and every connection (the endpoint refuses), ``start`` opens it again on
    the same port. ``hold(data)``, when given, is called with each chunk a client sends
    before it is forwarded: it may sleep, to make the endpoint slow."""

    def __init__(self, target_port: int, hold: Callable[[bytes], None] | None = None) -> None:
        self.target_port = target_port
        self.hold = hold
        self.port = free_port()
        self.listener: socket.socket | None = None
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.sockets += [client, upstream]
            for a, b, hold in ((client, upstream, self.hold), (upstream, client, None)):
                threading.Thread(target=self._pipe, args=(a, b, hold), daemon=True).start()

    def _pipe(
        self, source: socket.socket, target: socket.socket, hold: Callable[[bytes], None] | None
    ) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if hold is not None:
                    hold(data)
                target.sendall(data)
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        if self.listener is not None:
            # shutdown wakes the thread blocked in accept(); close alone may not
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)
            self.listener.close()
            self.listener = None
        with self.lock:
            sockets, self.sockets = self.sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
