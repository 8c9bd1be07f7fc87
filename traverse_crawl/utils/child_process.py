"""Start a child process of the crawl's (the snapshot writer, the WARC writer, replay's reader).

Both are fed over their stdin by the crawl's event loop, which must never block
on them: the pipe is grown so that the crawl runs ahead of the writer by about
40 pages of 22 KB before it keeps frames in memory, and the crawl's end of it is
non-blocking. The child's stdout is piped for its answers or summary.
"""

from __future__ import annotations

import fcntl
import os
import subprocess

PIPE_SIZE = 1 << 20


def start_writer(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``command`` with piped stdin and stdout, its stdin grown and non-blocking; OSError if
    no process can be started."""
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, bufsize=0
    )
    assert proc.stdin is not None
    try:
        fcntl.fcntl(proc.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    except OSError:
        pass  # the system's limit is lower: the default pipe works, with more waits
    os.set_blocking(proc.stdin.fileno(), False)
    return proc
