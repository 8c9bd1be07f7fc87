"""A child process for tests of the crawl's boot command (``utils/child_process.py``):
prints, at its exit, how many objects are frozen (``gc.get_freeze_count()``)."""

from __future__ import annotations

import atexit
import gc


def main() -> None:
    atexit.register(lambda: print("frozen at exit", gc.get_freeze_count(), flush=True))
