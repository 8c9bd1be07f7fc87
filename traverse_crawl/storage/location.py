"""Where a crawl's files go: a directory, or ``s3://BUCKET/PREFIX`` (docs/object-storage.md).

A ``Location`` is a root that holds whole objects under ``/``-separated keys (the
filesystem layout's relative paths): ``write`` puts one whole object atomically (a
reader sees the old object or the new one, never a part), ``read`` gets one (None
when it is not there), ``names`` lists what is directly under a key, like
``os.listdir``, and ``exists`` says whether the root is there. Two backends:
``FilesystemLocation`` (atomic rename, ``utils/atomic.py``) and ``BucketLocation``
(``storage/bucket.py``: an S3 PUT is atomic by itself). The snapshot store, the
manifests, the items files and the WARC files all go through this one interface.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO, Protocol

from traverse_crawl.config.extras import require_extra
from traverse_crawl.errors import ConfigError
from traverse_crawl.utils.atomic import atomic_write, atomic_write_bytes

BUCKET_SCHEME = "s3://"


def is_bucket_url(text: str) -> bool:
    """``s3://…``: a location in an S3-compatible bucket."""
    return text.strip().lower().startswith(BUCKET_SCHEME)


def split_bucket_url(name: str, text: str) -> tuple[str, str]:
    """``s3://BUCKET/PREFIX`` → ``(BUCKET, "PREFIX/")`` (``""`` for no prefix);
    ConfigError naming the setting for a URL without a bucket."""
    rest = text.strip()[len(BUCKET_SCHEME) :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise ConfigError(name, f"expected s3://BUCKET/PREFIX, got {text!r}")
    prefix = prefix.strip("/")
    return bucket, prefix + "/" if prefix else ""


class Location(Protocol):
    """A root of whole objects under ``/``-separated keys."""

    url: str  # as shown: an absolute path, or s3://BUCKET/PREFIX
    remote: bool  # in a bucket: nothing can be opened as a local file

    def exists(self) -> bool: ...

    def check(self, name: str) -> None:
        """At start-up: ConfigError naming the setting ``name`` unless the location can be
        written (a directory created; a bucket's endpoint reached and the bucket found)."""
        ...

    def shown(self, key: str) -> str:
        """The object's path or ``s3://`` URL, for messages."""
        ...

    def read(self, key: str) -> bytes | None: ...

    def write(self, key: str, data: bytes) -> None:
        """Put the whole object atomically; OSError (or the backend's error) if not."""
        ...

    def write_file(self, key: str, local_path: str) -> None:
        """Put the whole object from a finished local file."""
        ...

    def write_stream(self, key: str, write: Callable[[BinaryIO], None]) -> None:
        """Put the whole object that ``write(handle)`` streams (a manifest, never whole
        in memory): into a temporary file, then renamed or uploaded."""
        ...

    def names(self, key: str = "") -> list[str]:
        """Sorted names directly under ``key`` (objects and "directories"); [] if none."""
        ...

    def delete(self, key: str) -> None: ...


class FilesystemLocation:
    """A directory; ``key`` is a relative path with ``/`` separators."""

    remote = False

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.url = self.root

    def path(self, key: str) -> str:
        return os.path.join(self.root, *key.split("/")) if key else self.root

    def exists(self) -> bool:
        return os.path.isdir(self.root)

    def check(self, name: str) -> None:
        try:
            os.makedirs(self.root, exist_ok=True)
        except OSError as exc:
            raise ConfigError(name, f"cannot create {self.root!r}: {exc.strerror or exc}") from None

    def shown(self, key: str) -> str:
        return self.path(key)

    def read(self, key: str) -> bytes | None:
        try:
            with open(self.path(key), "rb") as handle:
                return handle.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def write(self, key: str, data: bytes) -> None:
        atomic_write_bytes(self.path(key), data)

    def write_file(self, key: str, local_path: str) -> None:
        with open(local_path, "rb") as source:
            atomic_write(self.path(key), lambda out: shutil.copyfileobj(source, out, 1 << 20))

    def write_stream(self, key: str, write: Callable[[BinaryIO], None]) -> None:
        atomic_write(self.path(key), write)

    def names(self, key: str = "") -> list[str]:
        try:
            return sorted(os.listdir(self.path(key)))
        except OSError:
            return []

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(key))


def canonical(text: str) -> str:
    """The one spelling of a location every worker of a crawl agrees on: a bucket URL
    as given (no trailing ``/``), a directory as an absolute path."""
    if is_bucket_url(text):
        return BUCKET_SCHEME + text.strip()[len(BUCKET_SCHEME) :].strip("/")
    return os.path.abspath(text)


def write_json(location: Location, key: str, obj: Any) -> None:
    """``json.dumps(obj, indent=2, ensure_ascii=False)``, streamed, as one whole object."""

    def write(handle: BinaryIO) -> None:
        text = io.TextIOWrapper(handle, encoding="utf-8", write_through=False)
        json.dump(obj, text, indent=2, ensure_ascii=False)
        text.flush()
        text.detach()

    location.write_stream(key, write)


def spool_directory(directory: str) -> str:
    """Where a crawl's temporary files for ``directory`` go: in it (its disk), or the
    system's temporary directory for a bucket."""
    return tempfile.gettempdir() if is_bucket_url(directory) else directory


def open_location(name: str, text: str, settings: Mapping[str, Any] | Any) -> Location:
    """The location a setting names: ``s3://BUCKET/PREFIX`` or a directory path.

    ``settings`` (Scrapy's, or a dict) gives a bucket its endpoint and credentials
    (``storage/bucket.py``). Nothing is contacted here: ``check`` does that.
    """
    if is_bucket_url(text):
        require_extra(name, "s3", text.strip())
        from traverse_crawl.storage.bucket import BucketLocation, bucket_config

        bucket, prefix = split_bucket_url(name, text)
        return BucketLocation(bucket, prefix, bucket_config(name, settings))
    return FilesystemLocation(text)
