"""Atomic file writes: temporary file, fsync, rename, directory fsync (docs/snapshots.md).

A crash at any point (SIGKILL, power loss after the fsyncs) leaves either the old file
or the new one under the final name, never a part of one. The temporary file lives in
the target directory (a rename is atomic only within one filesystem) and is named
``.<name>.<random>.tmp``: never ``*.json``, the only files either store implementation reads.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
from collections.abc import Callable
from typing import Any, BinaryIO

TEMP_SUFFIX = ".tmp"


def atomic_write(path: str, write: Callable[[BinaryIO], None]) -> None:
    """Write ``path`` atomically through ``write(handle)``, creating the directory.

    ``write`` streams into the temporary file, so a large document (a manifest)
    never needs a second copy in memory.
    """
    tmp, fd = create_temp(path)
    directory = os.path.dirname(tmp)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(directory)


def create_temp(path: str) -> tuple[str, int]:
    """A new temporary file beside ``path`` (its directory created), open for writing."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
    # os.open with 0o666 lets the umask decide the mode, as Node's writeFile
    # does; mkstemp would make every snapshot 0600 (unreadable by other users).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    return tmp, os.open(tmp, flags, 0o666)


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, creating the directory if needed."""

    def write(handle: BinaryIO) -> None:
        handle.write(data)

    atomic_write(path, write)


def atomic_write_text(path: str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str, obj: Any) -> None:
    """``json.dumps(obj, indent=2, ensure_ascii=False)``, streamed, written atomically."""

    def write(handle: BinaryIO) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", write_through=False)
        json.dump(obj, text, indent=2, ensure_ascii=False)
        text.flush()
        text.detach()  # the caller flushes, fsyncs and closes the file itself

    atomic_write(path, write)


def fsync_directory(directory: str, strict: bool = False) -> None:
    """Make the rename itself durable; best effort (not every filesystem allows it).

    ``strict``: an fsync that fails is raised (a directory that cannot be
    opened, or a filesystem without directory fsync, still is not).
    """
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if strict and exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)
