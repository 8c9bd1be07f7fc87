"""The web-archiving tools themselves, as a user runs them: warcio's CLI, pywb.

pywb is GPL-3.0 and pins old versions of several packages, so it lives in a
venv of its own (``.venv-pywb``, made by ``.ci/run``; requirements-pywb.in says
why) and is only ever run as a subprocess: ``wb-manager`` to build a
collection, ``wayback`` to serve it on 127.0.0.1.
"""

from __future__ import annotations

import gzip
import io
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.support.cli import REPO, crawl_args, scrapy_env
from tests.support.server import Reply, Server

# Beside the venv running the tests (``.ci/run`` makes both in the clone; a
# worktree whose .venv links to a shared one finds the shared .venv-pywb).
PYWB_BIN = Path(sys.prefix).resolve().parent / ".venv-pywb" / "bin"
WARCIO = Path(sys.executable).parent / "warcio"


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 120) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"{args} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def warcio_check(path: Path) -> str:
    return run(WARCIO, "check", "-v", path)


def warcio_index(path: Path) -> list[dict[str, str]]:
    fields = "warc-type,warc-target-uri,http:status,warc-profile,warc-concurrent-to,offset"
    out = run(WARCIO, "index", "-f", fields, path)
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def warc_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.warc.gz"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def pywb(root: Path, collection: str, *archives: Path, unpack_wacz: bool = False) -> Iterator[str]:
    """A pywb collection of ``archives`` served on 127.0.0.1; yields the replay prefix."""
    root.mkdir(parents=True, exist_ok=True)
    run(PYWB_BIN / "wb-manager", "init", collection, cwd=root)
    extra = ["--unpack-wacz"] if unpack_wacz else []
    run(PYWB_BIN / "wb-manager", "add", *extra, collection, *archives, cwd=root)
    port = _free_port()
    process = subprocess.Popen(
        [str(PYWB_BIN / "wayback"), "--bind", "127.0.0.1", "-p", str(port)],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    prefix = f"http://127.0.0.1:{port}/{collection}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
                break
            except (urllib.error.URLError, ConnectionError):
                assert process.poll() is None, "wayback exited"
                assert time.monotonic() < deadline, "wayback did not start"
                time.sleep(0.2)
        yield prefix
    finally:
        process.terminate()
        process.wait(timeout=30)


def replayed(prefix: str, url: str, timestamp: str = "") -> tuple[int, bytes]:
    """pywb's ``id_`` replay of ``url``: the archived payload, not rewritten, decoded."""
    request = urllib.request.Request(f"{prefix}/{timestamp}id_/{url}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return response.status, body
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def pywb_cdx(prefix: str, url: str) -> list[dict[str, str]]:
    """pywb's own CDX API for ``url``, with revisits resolved to their originals."""
    query = urllib.parse.urlencode({"url": url, "output": "json", "resolveRevisits": "true"})
    with urllib.request.urlopen(f"{prefix}/cdx?{query}", timeout=30) as response:
        return [json.loads(line) for line in response.read().decode().splitlines() if line]


def start_big_capture(
    server: Server, tmp_path: Path, pages: int, *settings: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """A ``scrapy crawl`` of ``pages`` slow pages into rolling 200 kB WARC files, started;
    ``settings``: more ``-s NAME=VALUE`` arguments."""
    filler = "<p>" + "lorem ipsum " * 2000 + "</p>"
    server.site({"/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(pages))})
    server.site(
        {f"/p{i}.html": Reply(body=f"<h1>{i}</h1>{filler}", delay=0.02) for i in range(pages)}
    )
    warc_dir = tmp_path / "warc"
    command = [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={server.url('/home.html')}", "-a", "source_id=big",
        "-s", f"TRAVERSE_MAX_PAGES={pages + 1}", "-s", "TRAVERSE_MAX_DEPTH=1",
        "-s", f"TRAVERSE_WARC_DIR={warc_dir}", "-s", "TRAVERSE_WARC_MAX_SIZE=200000",
        *crawl_args(tmp_path, server.origin), *settings,
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    return proc, warc_dir


def write_response(
    writer: WARCWriter, url: str, payload: bytes, headers: list[tuple[str, str]]
) -> str:
    """One ``response`` record of ``payload`` (HTML, with ``headers``), as a crawler would
    write it; its WARC-Record-ID."""
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *headers], "HTTP/1.1")
    record = writer.create_warc_record(
        url, "response", payload=io.BytesIO(payload), length=len(payload), http_headers=http,
        warc_headers_dict={"WARC-Date": "2020-01-01T00:00:00Z"},
    )  # fmt: skip
    writer.write_record(record)
    return str(record.rec_headers.get_header("WARC-Record-ID"))
