"""Peak memory of replaying one large page: the crawl process and its replay reader.

    .venv/bin/python bench/replay_memory.py [--mb 50] [--depth 0]

Captures one HTML page of about ``--mb`` MB (a paragraph with a link, repeated) from a
loopback server, then replays it with ``TRAVERSE_MAX_DEPTH=--depth`` (0: the page is at
the depth limit, its links are not needed) and prints the peak RSS (``VmHWM`` of
``/proc/PID/status``, polled while each process lives) of the replaying crawl and of its
reader process, and their ratio to the page's size.
"""

from __future__ import annotations

import argparse
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
READER = b"traverse_crawl.replay.reader_child"


def page(megabytes: float) -> bytes:
    unit = b'<p>some words of text here <a href="/l%d">a link</a> and more words</p>\n'
    count = int(megabytes * 1e6) // len(unit % 100000)
    return b"<html><body>" + b"".join(unit % (i % 100000) for i in range(count)) + b"</body></html>"


def serve(body: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            data = body if self.path == "/big.html" else b"no"
            self.send_response(200 if self.path == "/big.html" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def hwm(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return found


def crawl(tmp: Path, origin: str, mode: str, depth: int) -> tuple[int, int]:
    """Run one crawl; the peak RSS of the crawl process and of its reader (0: none)."""
    command = [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={origin}/big.html", "-a", "source_id=big",
        "-s", f"TRAVERSE_MODE={mode}", "-s", f"TRAVERSE_MAX_DEPTH={depth}",
        "-s", f"TRAVERSE_STORE={tmp / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp / mode}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={origin}", "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", "DOWNLOAD_MAXSIZE=0", "-s", "LOG_LEVEL=INFO",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    stderr: list[bytes] = []
    reader_thread = threading.Thread(target=lambda: stderr.append(proc.stderr.read()))  # type: ignore[union-attr]
    reader_thread.start()
    crawl_peak = reader_peak = 0
    while proc.poll() is None:
        crawl_peak = max(crawl_peak, hwm(proc.pid) or 0)
        for child in children(proc.pid):
            try:
                if READER in Path(f"/proc/{child}/cmdline").read_bytes():
                    reader_peak = max(reader_peak, hwm(child) or 0)
            except OSError:
                pass
        time.sleep(0.005)
    reader_thread.join()
    if proc.returncode != 0:
        sys.exit(f"{mode} crawl exited {proc.returncode}:\n{stderr[0].decode()[-3000:]}")
    return crawl_peak, reader_peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=50)
    parser.add_argument("--depth", type=int, default=0)
    args = parser.parse_args()
    body = page(args.mb)
    server, origin = serve(body)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            crawl(Path(tmp), origin, "capture", args.depth)
            crawl_peak, reader_peak = crawl(Path(tmp), origin, "replay", args.depth)
    finally:
        server.shutdown()
    size = len(body)
    mb = 1e6
    print(
        f"page {size / mb:.1f} MB, depth limit {args.depth}: replay crawl process peak "
        f"{crawl_peak / mb:.0f} MB ({crawl_peak / size:.2f}x), reader process peak "
        f"{reader_peak / mb:.0f} MB ({reader_peak / size:.2f}x)"
    )


if __name__ == "__main__":
    main()
