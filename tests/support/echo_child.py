"""A child process for ``ChildProcess`` tests (``utils/child_process.py``): answers each
job with itself, after ``delay`` seconds if its configuration says so, and at EOF sends
its summary (how many it answered)."""

from __future__ import annotations

import time

from traverse_crawl.utils.frames import begin, finish, next_batch, send


def main() -> None:
    frames, config = begin()
    if config is None:
        return
    time.sleep(config.get("delay", 0.0))
    answered = 0
    while batch := next_batch(frames, 64):
        for job in batch:
            send(1, job)
            answered += 1
    finish({"answered": answered})
