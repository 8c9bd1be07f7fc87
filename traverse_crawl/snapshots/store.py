"""Traverse's filesystem snapshot store, readable by both implementations (docs/snapshots.md).

Layout: ``<root>/<source_dir_name(id)>/<fetchedAt with ":"→"-">-<bodyHash[:12]>.json``.
Writes are atomic (``utils/atomic.py``; a capture's pages are committed in batches
by ``snapshots/batch_write.py``, same guarantee). Where Traverse's code and its docs
disagree (the order, ``get``'s prefix, what is skipped), the code is copied.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import json
import logging
import math
import os
import re
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, cast

from traverse_crawl.snapshots.file_text import encode as encode
from traverse_crawl.snapshots.file_text import serialize as serialize
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.source_ref import SourceRef, parse_source_ref
from traverse_crawl.storage.location import (
    FilesystemLocation,
    Location,
    is_bucket_url,
    open_location,
)
from traverse_crawl.utils.javascript import decode_base64, js_string, locale_compare, utf8
from traverse_crawl.utils.redact import redact_text

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_STRING_FIELDS = ("sourceId", "url", "fetchedAt", "contentType", "body", "bodyHash")
_OPTIONAL_STRINGS = ("etag", "lastModified")
# Descriptions of damaged files met while reading (the store's ``list`` shadows
# the builtin inside the class, hence the alias).
Damaged = list[str]


class SnapshotReadError(OSError):
    """A page's snapshot that may be stored but cannot be used: an object or a listing of
    a bucket that could not be read after the retries (``storage/bucket.py``), or a body
    that no longer matches its ``bodyHash``. Not the same as "not stored" (None)."""


# -- names -----------------------------------------------------------------------


def source_dir_name(source_id: str) -> str:
    """Traverse's rule: sanitise, trim ``-``, cut to 80, fall back to ``source``, add 8 hex.

    The trim comes before the cut, so a trailing ``-`` can survive it. After the
    sanitising only ASCII is left, so cutting code points equals JavaScript's
    cut of UTF-16 code units.
    """
    name = _UNSAFE.sub("-", js_string(source_id)).strip("-")[:80] or "source"
    digest = hashlib.sha256(utf8(source_id)).hexdigest()[:8]
    return f"{name}-{digest}"


def shown_name(text: str, source_id: str) -> str:
    """``text`` (a path, a message) as printed: when ``source_id`` carries a URL's
    password, the name made of it is shown as a glob of its hash suffix
    (``*-1a2b3c4d``), which finds the one file or directory without printing it."""
    if redact_text(source_id) == source_id:
        return text
    name = source_dir_name(source_id)
    return text.replace(name, "*-" + name.rsplit("-", 1)[1])


def file_name(snapshot: Snapshot) -> str:
    """``<fetchedAt with ":" → "-">-<first 12 of bodyHash>.json``."""
    return f"{snapshot['fetchedAt'].replace(':', '-')}-{snapshot['bodyHash'][:12]}.json"


# -- file text (written by ``snapshots/file_text.py``) ----------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"JSON.parse rejects {name}")


def _finite_float(text: str) -> float:
    # 1e400 parses as infinity, which the manifest could only write as the
    # invalid JSON ``Infinity``: such a file is damaged.
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text} is out of range")
    return number


# Built once: ``json.loads`` with hooks builds a decoder and its scanner per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def deserialize(text: str) -> Snapshot | None:
    """A stored snapshot, or None when the text is not one (foreign or damaged)."""
    parsed = check_snapshot_text(text)
    return parsed if isinstance(parsed, dict) else None


def check_snapshot_text(text: str) -> Snapshot | str:
    """A stored snapshot, or why the text is not one (a torn or damaged file).

    Mirrors Traverse's ``fromDiskShape`` + ``isSnapshot``: a string
    ``bodyBytesBase64`` becomes ``bodyBytes``; any other ``bodyBytes`` (a JSON
    value cannot be bytes) makes the file foreign; other extra keys are kept.
    Stricter than Traverse: numbers must be finite, ``status`` a whole number,
    and the optional fields must have their types; a file that is not a snapshot
    is skipped with a warning naming it, where Traverse skips it silently.
    """
    try:
        data = json.loads(text) if text.startswith("\ufeff") else _DECODER.decode(text)
    except ValueError as exc:
        return f"not valid JSON ({exc})"
    except RecursionError:
        return "not valid JSON (nested too deeply)"
    if not isinstance(data, dict):
        return "not a JSON object"
    encoded = data.get("bodyBytesBase64")
    if isinstance(encoded, str):
        del data["bodyBytesBase64"]
        try:
            data["bodyBytes"] = decode_base64(encoded)
        except (binascii.Error, ValueError):  # unreachable for the lenient path
            return "bodyBytesBase64 is not base64"
    elif "bodyBytes" in data:
        return "bodyBytes is not allowed on disk"
    for key in _STRING_FIELDS:
        if not isinstance(data.get(key), str):
            return f"{key} is missing or not a string"
    status = data.get("status")
    if isinstance(status, bool) or not isinstance(status, (int, float)):
        return "status is missing or not a number"
    if isinstance(status, float):
        if not status.is_integer():
            return f"status {status} is not a whole number"
        data["status"] = int(status)  # JavaScript has one number type: 200.0 is 200
    for key in _OPTIONAL_STRINGS:
        if key in data and not isinstance(data[key], str):
            return f"{key} is not a string"
    redirects = data.get("redirects", [])
    if not isinstance(redirects, list) or not all(isinstance(r, str) for r in redirects):
        return "redirects is not a list of strings"
    return cast(Snapshot, data)


# -- order -----------------------------------------------------------------------


def _newest_first(a: Snapshot, b: Snapshot) -> int:
    # Traverse's comparator, verbatim: equal fetchedAt strings fall to the hash, and
    # both compare with JavaScript's localeCompare (ICU root collation), not by code point.
    if a["fetchedAt"] == b["fetchedAt"]:
        return locale_compare(b["bodyHash"], a["bodyHash"])
    return locale_compare(b["fetchedAt"], a["fetchedAt"])


def sort_newest_first(snapshots: list[Snapshot]) -> list[Snapshot]:
    return sorted(snapshots, key=functools.cmp_to_key(_newest_first))


def _newest(snapshots: Iterable[Snapshot]) -> Snapshot | None:
    """The first of ``sort_newest_first(snapshots)``, holding one snapshot at a time: a
    page captured thousands of times is read file by file, not all in memory at once."""
    newest: Snapshot | None = None
    for snapshot in snapshots:
        if newest is None or _newest_first(snapshot, newest) < 0:
            newest = snapshot
    return newest


# -- the store -------------------------------------------------------------------


class SnapshotStore:
    """put / latest / get / list, with Traverse's newest-first order, in a ``Location``
    (a directory, or ``s3://BUCKET/PREFIX``: ``storage/location.py``), under the same
    keys and with the same bytes in both.

    To read a snapshot: ``latest(page_id)`` (the page's newest capture, which replay
    serves) or ``get_by_source_ref(ref)`` (the exact capture a manifest or an item names).
    """

    def __init__(self, location: Location) -> None:
        self.location = location
        self.root = location.url
        # A directory is read with the plain system calls (the replay's hot path).
        self._directory_root = location.root if isinstance(location, FilesystemLocation) else None

    def exists(self) -> bool:
        return self.location.exists()

    def directory(self, source_id: str) -> str:
        return self.location.shown(source_dir_name(source_id))

    def key(self, snapshot: Snapshot) -> str:
        """``<source dir>/<file name>``: the file's path under the root, ``/``-separated;
        ``ValueError`` for a name that would leave the source directory."""
        name = file_name(snapshot)
        if "/" in name or "\\" in name or "\x00" in name or os.sep in name:
            raise ValueError(f"snapshot file name would leave its directory: {name!r}")
        return f"{source_dir_name(snapshot['sourceId'])}/{name}"

    def path(self, snapshot: Snapshot) -> str:
        return self.location.shown(self.key(snapshot))

    def put(self, snapshot: Snapshot) -> str:
        """Write atomically and return the path. The same ``fetchedAt`` and hash
        prefix overwrite the file, as a 304's re-put does.

        A file name that would leave the source directory (a ``/`` in ``fetchedAt``,
        which only a hand-made file can carry) is refused (``key``)."""
        key = self.key(snapshot)
        self.location.write(key, encode(snapshot))
        return self.location.shown(key)

    def list(self, source_id: str, damaged: Damaged | None = None) -> list[Snapshot]:
        """Every readable snapshot of ``source_id``, newest first.

        The ``sourceId`` inside a file is not compared with ``source_id``, as in Traverse.
        Each damaged file is logged and, when ``damaged`` is given, described there.
        """
        return sort_newest_first(list(self._read(source_dir_name(source_id), damaged)))

    def latest(
        self, source_id: str, damaged: Damaged | None = None, *, strict: bool = False
    ) -> Snapshot | None:
        """The newest snapshot of ``source_id``, None if none is stored. ``strict``: an
        object of the page (or its listing) that a bucket could not serve raises
        ``SnapshotReadError`` rather than being passed over, for a reader that must not
        take "could not read" for "not stored" (replay)."""
        return _newest(self._read(source_dir_name(source_id), damaged, strict))

    def get(self, source_id: str, hash_or_prefix: str) -> Snapshot | None:
        """The newest snapshot whose hash starts with ``hash_or_prefix``.

        No ambiguity check, so an empty prefix returns the newest: Traverse's code,
        though its docs say "full or unambiguous prefix".
        """
        return _newest(
            snapshot
            for snapshot in self._read(source_dir_name(source_id))
            if snapshot["bodyHash"].startswith(hash_or_prefix)
        )

    def find(self, source_id: str, body_hash: str, fetched_at: str) -> Snapshot | None:
        """The snapshot a ``sourceRef`` names: its exact hash and ``fetchedAt``.

        ``get`` alone would answer with the newest capture of the same body.
        """
        return _newest(
            snapshot
            for snapshot in self._read(source_dir_name(source_id))
            if snapshot["bodyHash"] == body_hash and snapshot["fetchedAt"] == fetched_at
        )

    def get_by_source_ref(self, source_ref: str) -> Snapshot | None:
        """The snapshot a ``traverse-snapshot:`` ref names (``find``), or None if none is stored.

        Raises ``ValueError`` for a string that is not such a ref.
        """
        ref = parse_source_ref(source_ref)
        if ref is None:
            raise ValueError(f"not a traverse-snapshot sourceRef: {source_ref!r}")
        return self.find(ref.source_id, ref.body_hash, ref.fetched_at)

    def read_ref(self, ref: SourceRef) -> Snapshot | None:
        """The snapshot ``ref`` names, found by its file name (``fetchedAt`` and hash, so a
        page captured many times is not a scan of its directory), else by ``find``.

        The name is made by ``key``, which refuses one that would leave the source
        directory (a ``/`` or ``..`` path in a hand-written ref's ``fetchedAt``): such a
        ref names no snapshot of this store. The body is not checked (``model.body_matches``).
        A file that is there but cannot be read (a bucket's 500 after the retries, a cut,
        a failed checksum; a permission) raises ``SnapshotReadError``: not "not stored".
        """
        wanted = {"sourceId": ref.source_id, "fetchedAt": ref.fetched_at,
                  "bodyHash": ref.body_hash}  # fmt: skip
        try:
            key = self.key(cast(Snapshot, wanted))
        except ValueError:
            return None
        try:
            data = self.location.read(key)
        except OSError as exc:
            raise SnapshotReadError(str(exc)) from exc
        snapshot = None if data is None else deserialize(data.decode("utf-8", "replace"))
        if (
            snapshot is not None
            and snapshot["bodyHash"] == ref.body_hash
            and snapshot["fetchedAt"] == ref.fetched_at
        ):
            return snapshot
        return self.find(ref.source_id, ref.body_hash, ref.fetched_at)

    def walk(self, seed_id_prefix: str = "") -> Iterator[Snapshot]:
        """Every readable snapshot in the store, directory by directory.

        With ``seed_id_prefix``, only the directories whose names an id that
        starts with it can have: the sanitised prefix, trimmed, is a prefix of
        the sanitised id (runs of unsafe characters stay one ``-`` across the
        join), and the cut at 80 keeps that true. The caller still checks the
        ``sourceId`` inside each snapshot.
        """
        name_prefix = _UNSAFE.sub("-", js_string(seed_id_prefix)).strip("-")[:80]
        root = self._directory_root
        for name in self.location.names():
            if not name.startswith(name_prefix):
                continue
            if root is None or os.path.isdir(os.path.join(root, name)):
                yield from self._read(name)

    def _read(
        self, name: str, damaged: Damaged | None = None, strict: bool = False
    ) -> Iterator[Snapshot]:
        if self._directory_root is not None:
            return _read_directory(os.path.join(self._directory_root, name), damaged)
        return _read_objects(self.location, name, damaged, strict)


class FilesystemSnapshotStore(SnapshotStore):
    """The store in a directory (Traverse's ``createFilesystemSnapshotStore``)."""

    def __init__(self, root: str) -> None:
        super().__init__(FilesystemLocation(root))  # Traverse resolves the root once, too


def store_exists(root: str, settings: Any = None) -> bool:
    """Whether there is a store at ``root``: a directory, or objects under a bucket's prefix."""
    if not is_bucket_url(root):
        return os.path.isdir(root)
    return open_snapshot_store(root, settings).exists()


def open_snapshot_store(root: str, settings: Any = None) -> SnapshotStore:
    """The store at a directory or ``s3://BUCKET/PREFIX`` (``settings``: the ``AWS_*``)."""
    if is_bucket_url(root):
        return SnapshotStore(open_location("TRAVERSE_STORE", root, settings or {}))
    return FilesystemSnapshotStore(root)


def _read_directory(directory: str, damaged: list[str] | None = None) -> Iterator[Snapshot]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return  # Traverse: a directory that cannot be read holds nothing
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)  # cheaper than open()
            try:
                raw = _read_whole(fd)
            finally:
                os.close(fd)
        except OSError:
            continue
        # Node's readFile(..., "utf8") replaces invalid bytes rather than failing. The
        # file's bytes and then its text are let go as soon as they are used: a large
        # snapshot is held once or twice at a time, not three times.
        text = raw.decode("utf-8", "replace")
        del raw
        parsed = check_snapshot_text(text)
        del text
        if isinstance(parsed, str):
            # Traverse skips it silently; a torn or corrupt file is worth a word.
            problem = f"snapshot file {os.path.join(directory, name)} is damaged: {parsed}"
            logger.warning("%s; skipped", problem)
            if damaged is not None:
                damaged.append(problem)
            continue
        yield parsed


def _read_whole(fd: int) -> bytes:
    """The file's bytes, in one read of its size where it can (a large file is not
    gathered from pieces and then joined: one copy, not two)."""
    raw = os.read(fd, os.fstat(fd).st_size + 1)
    if not raw:
        return raw
    rest = b"".join(iter(functools.partial(os.read, fd, 1 << 20), b""))
    return raw + rest if rest else raw


READ_AHEAD = 8  # GETs in flight while a page's snapshots in a bucket are read in order

_read_pool: tuple[int, ThreadPoolExecutor] | None = None
_read_pool_lock = threading.Lock()


def _reader_threads() -> ThreadPoolExecutor:
    """This process's threads for bucket reads (a forked child gets threads of its own)."""
    global _read_pool
    with _read_pool_lock:
        if _read_pool is None or _read_pool[0] != os.getpid():
            pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="traverse-store-read")
            _read_pool = (os.getpid(), pool)
        return _read_pool[1]


def _get(location: Location, key: str) -> bytes | OSError | None:
    try:
        return location.read(key)
    except OSError as exc:
        return exc


def _fetched(location: Location, keys: list[str]) -> Iterator[tuple[str, bytes | OSError | None]]:
    """Each key's object, in order. Each GET is a round trip: with more than one, up to
    ``READ_AHEAD`` are in flight at once (botocore's client is thread-safe), so a page
    captured many times costs about its count / READ_AHEAD round trips, and no more than
    ``READ_AHEAD`` snapshots are held at once."""
    if len(keys) < 2:  # the common case (one capture per page): no thread hop
        for key in keys:
            yield key, _get(location, key)
        return
    pool, ahead = _reader_threads(), iter(keys)
    window: deque[tuple[str, Future[bytes | OSError | None]]] = deque()
    while True:
        while len(window) < READ_AHEAD and (wanted := next(ahead, None)) is not None:
            window.append((wanted, pool.submit(_get, location, wanted)))
        if not window:
            return
        key, job = window.popleft()
        yield key, job.result()


def _read_objects(
    location: Location, name: str, damaged: Damaged | None, strict: bool = False
) -> Iterator[Snapshot]:
    """``_read_directory`` for a store in a bucket: the same files, the same checks.
    ``strict``: a listing or an object that cannot be read raises ``SnapshotReadError``."""
    try:
        files = location.names(name)
    except OSError as exc:  # retried already (storage/bucket.py): read as nothing, said once
        if strict:
            raise SnapshotReadError(str(exc)) from exc
        logger.warning("cannot list %s: %s", location.shown(name), exc)
        return
    keys = [f"{name}/{file}" for file in files if file.endswith(".json")]
    for key, raw in _fetched(location, keys):
        if isinstance(raw, OSError):
            if strict:
                raise SnapshotReadError(str(raw)) from raw
            logger.warning("cannot read a snapshot: %s", raw)
            continue
        if raw is None:
            continue  # listed, then gone
        parsed = check_snapshot_text(raw.decode("utf-8", "replace"))
        if isinstance(parsed, str):
            problem = f"snapshot file {location.shown(key)} is damaged: {parsed}"
            logger.warning("%s; skipped", problem)
            if damaged is not None:
                damaged.append(problem)
            continue
        yield parsed
