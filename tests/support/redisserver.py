"""A real ``redis-server`` on 127.0.0.1 for tests (never a fake Redis).

Each server gets a free port and a directory of its own, keeps nothing on disk
(``--save ""``, no AOF), and is killed by PID when the test ends. Tests can pause
it (SIGSTOP/SIGCONT), kill it and start it again on the same port.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.scrapyd_harness import free_port

REDIS_SERVER = shutil.which("redis-server")


class RedisServer:
    """One throwaway redis-server process; ``url`` is what workers get as ``REDIS_URL``."""

    def __init__(self, directory: Path, port: int | None = None, *extra: str) -> None:
        """``extra``: more redis-server options (``--requirepass``, ``--maxmemory``...)."""
        self.directory = directory
        self.port = port or free_port()
        self.extra = list(extra)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        if REDIS_SERVER is None:
            raise RuntimeError("redis-server is not installed (.ci/run installs it)")
        self.directory.mkdir(parents=True, exist_ok=True)
        args = ["--bind", "127.0.0.1", "--port", str(self.port), "--save", ""]
        args += ["--appendonly", "no", "--dir", str(self.directory), "--logfile", "redis.log"]
        args += self.extra
        self.process = subprocess.Popen(
            [REDIS_SERVER, *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))
        except OSError:
            return False

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Kill the server (SIGKILL after SIGCONT, so a paused one dies too)."""
        if self.process is None or self.process.poll() is not None:
            return
        os.kill(self.process.pid, signal.SIGCONT)
        self.process.kill()
        self.process.wait(timeout=10)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if REDIS_SERVER is None:
        pytest.fail("redis-server is not installed; .ci/run installs Debian's redis-server")
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        yield server
    finally:
        server.stop()
