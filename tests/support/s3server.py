"""A real S3-compatible server on 127.0.0.1 for tests: moto's server mode.

``python -m moto.server`` is started as a process on a free port, waited for until
``GET /`` answers, and killed by its PID when the test ends. moto keeps its objects
in memory, so a test that takes the endpoint away mid-crawl stops a ``Relay`` (a
plain TCP forwarder on loopback in front of the server, tests/support/relay.py) rather
than the server: the crawl sees its endpoint refuse connections, and the bucket keeps
what it holds. A test that wants the bucket to fail some requests puts a ``FaultProxy``
(tests/support/fault_proxy.py) in front of it instead.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.relay import Relay as Relay  # the tests that take the endpoint away
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
