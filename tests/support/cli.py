"""Run ``scrapy`` as a user would: a subprocess in the project directory."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def scrapy_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SCRAPY_SETTINGS_MODULE", None)  # found through scrapy.cfg, as for a user
    env["PYTHONPATH"] = str(REPO)
    return env


def scrapy(
    *args: str, timeout: float = 60, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``python_flags``: the interpreter's own options, such as ``("-X", "importtime")``."""
    return subprocess.run(
        [sys.executable, *python_flags, "-m", "scrapy", *args],
        cwd=REPO,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def crawl_args(tmp: Path, *origins: str) -> list[str]:
    """Settings every CLI test crawl needs: throwaway dirs, loopback allowed, no delay."""
    return [
        "-s", f"TRAVERSE_STORE={tmp / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp / 'manifests'}",
        "-s", f"TRAVERSE_EGRESS_ALLOW={','.join(origins)}",
        "-s", "TRAVERSE_MIN_DELAY=0",
    ]  # fmt: skip


def wait_for(condition: Callable[[], object], what: str, timeout: float = 30) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def child_pid(parent_pid: int, marker: bytes) -> int | None:
    """A child process of ``parent_pid`` whose command line holds ``marker`` (the crawl's
    writer processes: ``b"traverse_crawl.warc.writer_child"``, ...), found through /proc."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read()
        except OSError:
            continue
        if parent == parent_pid and marker in command:
            return int(entry)
    return None


def scrapy_on_a_terminal(*args: str, term: str = "xterm", columns: int = 160) -> tuple[int, bytes]:
    """Run ``scrapy ARGS`` from the repository root with stderr on a pseudo-terminal
    (so the live display is drawn): its exit status and every byte it wrote there."""
    leader, follower = pty.openpty()
    env = {**scrapy_env(), "TERM": term, "COLUMNS": str(columns), "LINES": "40"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(leader)
    return proc.returncode, b"".join(chunks)
