"""Group commit: many atomic file writes made durable together (in the capture's writer process).

``utils/atomic.py`` makes one file durable with two fsyncs, each a device cache
flush on a disk with a volatile write cache: two per page. A batch keeps the same
guarantee (a file under its final name was complete on disk before the rename, and
is reported written only once the rename is durable) with two flushes per *batch*.
Hand-written because nothing in the standard library or Scrapy commits a group of files.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import os
from collections.abc import Callable, Sequence

from traverse_crawl.utils.atomic import create_temp, fsync_directory

MAX_BATCH = 128  # files (and so open descriptors) per batch


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        # The process's own symbols, libc's among them: ``find_library`` would run
        # ldconfig, a cost every writer process's start-up would pay.
        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs  # Linux only; ctypes releases the GIL for the call
    except (OSError, AttributeError, TypeError):
        return None
    syncfs.argtypes = [ctypes.c_int]
    syncfs.restype = ctypes.c_int
    return syncfs


_SYNCFS = _load_syncfs()


def sync_filesystem(fd: int) -> None:
    """``syncfs(fd)``: every dirty file of ``fd``'s filesystem made durable; OSError if not."""
    assert _SYNCFS is not None
    if _SYNCFS(fd) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"syncfs failed: {os.strerror(errno)}")


class _File:
    __slots__ = ("device", "error", "fd", "path", "temp")

    def __init__(self, path: str) -> None:
        self.path = path
        self.temp = ""
        self.fd = -1
        self.device = 0
        self.error: BaseException | None = None

    def fail(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
        self.close()
        if self.temp:
            with contextlib.suppress(OSError):
                os.unlink(self.temp)
            self.temp = ""

    def close(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def write_batch(
    jobs: Sequence[tuple[str, Callable[[], bytes]]], use_syncfs: bool = True
) -> list[BaseException | None]:
    """Write each ``(path, render)`` atomically and durably; one error or None per job.

    1. every file of the batch is written to its temporary name (no fsync);
    2. the data is made durable together: Linux's ``syncfs(2)`` on the filesystem
       that holds them (one journal commit and one cache flush); elsewhere, or if
       ``syncfs`` is missing, an fsync per file;
    3. the temporary files are renamed to their final names;
    4. the renames (and new directories) are made durable together: ``syncfs``
       again, or an fsync per directory touched and of its parent.

    ``syncfs`` flushes every dirty file of that filesystem, not only ours: a batch
    waits for other programs' writes too, which still costs less than a flush per
    file. Since Linux 5.8 it reports writeback errors.

    Failures are per file where the kernel says which file failed (creating,
    writing, renaming: a full disk, a permission, a file where a directory should
    be) and per batch where it cannot (a failed ``syncfs``: every file of the batch
    on that filesystem fails, its temporary file removed). A file that failed is
    never reported written; files of earlier batches were durable already.
    """
    files = [_File(path) for path, _ in jobs]
    for file, (_, render) in zip(files, jobs, strict=True):
        try:
            data = render()
            file.temp, file.fd = create_temp(file.path)
            view = memoryview(data)
            while view:
                view = view[os.write(file.fd, view) :]
            file.device = os.fstat(file.fd).st_dev
        except Exception as exc:  # the I/O edge: this file fails, the batch goes on
            file.fail(exc)
    syncfs = use_syncfs and _SYNCFS is not None
    _sync_data(files, syncfs)
    for file in files:
        file.close()
        if file.error is None:
            try:
                os.replace(file.temp, file.path)
            except OSError as exc:
                file.fail(exc)
            else:
                file.temp = ""
    _sync_names(files, syncfs)
    return [file.error for file in files]


def _alive(files: list[_File]) -> list[_File]:
    return [file for file in files if file.error is None]


def _sync_data(files: list[_File], syncfs: bool) -> None:
    """Step 2: the temporary files' bytes on disk."""
    if not syncfs:
        for file in _alive(files):
            try:
                os.fsync(file.fd)
            except OSError as exc:
                file.fail(exc)
        return
    by_device: dict[int, list[_File]] = collections.defaultdict(list)
    for file in _alive(files):
        by_device[file.device].append(file)
    for group in by_device.values():
        try:
            sync_filesystem(group[0].fd)
        except OSError as exc:
            for file in group:  # which file's data was lost is not known: all of them
                file.fail(exc)


def _sync_names(files: list[_File], syncfs: bool) -> None:
    """Step 4: the renames, and the directories created for them, on disk."""
    by_directory: dict[str, list[_File]] = collections.defaultdict(list)
    for file in _alive(files):
        by_directory[os.path.dirname(file.path) or "."].append(file)
    if syncfs:
        by_device: dict[int, list[_File]] = collections.defaultdict(list)
        for file in _alive(files):
            by_device[file.device].append(file)
        for group in by_device.values():
            try:
                fd = os.open(os.path.dirname(group[0].path) or ".", os.O_RDONLY)
                try:
                    sync_filesystem(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                for file in group:  # renamed, but not known to be durable: not reported
                    file.error = exc
        return
    parents = {os.path.dirname(directory) or "." for directory in by_directory}
    for directory in parents - set(by_directory):
        fsync_directory(directory)  # a new source directory's own entry
    for directory, group in by_directory.items():
        try:
            fsync_directory(directory, strict=True)
        except OSError as exc:
            for file in group:
                file.error = exc
