"""A real small filesystem for disk-full tests: a tmpfs mounted for one test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """``mount``, created and mounted as an empty tmpfs of ``size`` (``64k``, ``1m``)
    until the block ends; the test is skipped where it cannot be mounted (mounting
    needs root: CI runs as root)."""
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
