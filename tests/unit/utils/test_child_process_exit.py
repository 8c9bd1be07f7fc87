"""A child started by the crawl's boot command exits with its heap frozen, so the
interpreter's shutdown skips its full collection (``utils/child_process.py``)."""

from __future__ import annotations

import subprocess

from traverse_crawl.utils.child_process import command


def test_the_child_exits_with_its_heap_frozen() -> None:
    done = subprocess.run(
        command("tests.support.exit_probe", False),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert int(done.stdout.rsplit(" ", 1)[1]) > 0, done.stdout
