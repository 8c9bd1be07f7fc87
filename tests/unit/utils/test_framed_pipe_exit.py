"""A child started by ``package_command`` exits with its heap frozen, so the
interpreter's shutdown skips its full collection (``utils/framed_pipe.py``)."""

from __future__ import annotations

import subprocess

from traverse_crawl.utils.framed_pipe import package_command


def test_the_child_exits_with_its_heap_frozen() -> None:
    done = subprocess.run(
        package_command("tests.support.exit_probe", False),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert int(done.stdout.rsplit(" ", 1)[1]) > 0, done.stdout
