"""Read manifests back for ``scrapy diff`` and ``scrapy report`` (docs/reports.md).

An argument is a manifest file or a directory of them (every ``*.json`` directly
inside it), on disk or in a bucket (``s3://BUCKET/PREFIX``, docs/object-storage.md).
Anything that is not a readable manifest is a ``ManifestError`` that names the file,
so the command can print one line and exit 2.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from traverse_crawl.errors import ConfigError
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import SnapshotStore
from traverse_crawl.storage.location import Location, is_bucket_url, open_location

# Beside each manifest, its checks' results (``TRAVERSE_CHECKS``): not a manifest.
CHECKS_SUFFIX = ".checks.json"


def is_manifest_name(name: str) -> bool:
    return name.endswith(".json") and not name.endswith(CHECKS_SUFFIX)


def skipped_path(manifest: str) -> str:
    """``<name>.skipped.jsonl`` beside the manifest ``<name>.json`` (``TRAVERSE_SKIPPED``)."""
    return manifest.removesuffix(".json") + ".skipped.jsonl"


class ManifestError(Exception):
    """One input that cannot be read as a manifest: ``str()`` names the file."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path


@dataclass(frozen=True)
class Loaded:
    """One seed's manifest and the file it came from."""

    path: str
    data: dict[str, Any]

    @property
    def seed_id(self) -> str:
        seed_id: str = self.data["seed"]["id"]
        return seed_id


def load_all(arguments: list[str], settings: Any = None) -> list[Loaded]:
    """Every manifest named by ``arguments``, in argument then file-name order
    (``settings``: the ``AWS_*`` settings for ``s3://`` arguments)."""
    loaded: list[Loaded] = []
    first: dict[str, str] = {}
    for argument in arguments:
        for path in _files(argument, settings):
            manifest = Loaded(path, load(path, settings))
            if manifest.seed_id in first:
                raise ManifestError(
                    path, f"seed id {manifest.seed_id!r} is also in {first[manifest.seed_id]}"
                )
            first[manifest.seed_id] = path
            loaded.append(manifest)
    return loaded


def _files(argument: str, settings: Any) -> list[str]:
    if is_bucket_url(argument):
        return _objects(argument, settings)
    if os.path.isdir(argument):
        try:
            names = sorted(n for n in os.listdir(argument) if is_manifest_name(n))
        except OSError as exc:
            raise ManifestError(argument, f"cannot list: {exc.strerror or exc}") from None
        if not names:
            raise ManifestError(argument, "directory holds no manifest (*.json)")
        return [os.path.join(argument, name) for name in names]
    return [argument]


def _objects(argument: str, settings: Any) -> list[str]:
    """A manifest object (``….json``), else every ``*.json`` directly under the prefix."""
    if argument.endswith(".json"):
        return [argument]
    location = _location(argument, settings)
    try:
        names = [name for name in location.names() if is_manifest_name(name)]
    except OSError as exc:
        raise ManifestError(argument, f"cannot list: {exc}") from None
    if not names:
        raise ManifestError(argument, "holds no manifest (*.json)")
    return [f"{location.url}/{name}" for name in names]


def _location(url: str, settings: Any) -> Location:
    try:
        return open_location(url, url, settings or {})
    except ConfigError as exc:
        raise ManifestError(url, str(exc)) from None


def read_bytes(path: str, settings: Any = None) -> bytes | None:
    """A file's or an ``s3://`` object's bytes; None when it is not there; OSError if
    it cannot be read."""
    if is_bucket_url(path):
        directory, _, name = path.rpartition("/")
        return _location(directory, settings).read(name)
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def load(path: str, settings: Any = None) -> dict[str, Any]:
    try:
        raw = read_bytes(path, settings)
    except OSError as exc:
        raise ManifestError(path, f"cannot read: {exc.strerror or exc}") from None
    if raw is None:
        raise ManifestError(path, "cannot read: No such file or directory")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ManifestError(path, f"not JSON ({exc})") from None
    except RecursionError:  # arrays or objects nested thousands deep: no manifest is
        raise ManifestError(path, "not JSON (nested deeper than a manifest can be)") from None
    problem = shape_problem(data)
    if problem is not None:
        raise ManifestError(path, f"not a traverse manifest: {problem}")
    return data  # type: ignore[no-any-return]


def shape_problem(data: Any) -> str | None:
    """What keeps ``data`` from being a manifest, or None.

    As strict as the readers need (page ``url``, ``depth``, and exactly one of
    ``snapshot`` with a ``bodyHash`` or ``error`` with a ``kind``); fields it does
    not know are ignored, so manifests from Traverse itself and from older versions
    of this project load.
    """
    if not isinstance(data, dict):
        return "the top level is not an object"
    seed = data.get("seed")
    if not isinstance(seed, dict) or not isinstance(seed.get("id"), str):
        return "no seed.id"
    pages = data.get("pages")
    if not isinstance(pages, list):
        return "no pages list"
    warnings = data.get("warnings", [])
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        return "warnings is not a list of strings"
    for index, page in enumerate(pages):
        problem = _page_problem(page)
        if problem is not None:
            return f"pages[{index}] {problem}"
    return None


def _page_problem(page: Any) -> str | None:
    if not isinstance(page, dict):
        return "is not an object"
    if not isinstance(page.get("url"), str):
        return "has no url"
    depth = page.get("depth")
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        return "has no depth"
    fetch = page.get("fetch")
    if not isinstance(fetch, dict):
        return "has no fetch"
    snapshot, error = fetch.get("snapshot"), fetch.get("error")
    if (snapshot is None) == (error is None):
        return "has not exactly one of fetch.snapshot and fetch.error"
    if snapshot is not None and not (
        isinstance(snapshot, dict) and isinstance(snapshot.get("bodyHash"), str)
    ):
        return "has a snapshot without bodyHash"
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("kind"), str)):
        return "has an error without kind"
    return None


def stored_snapshot(store: SnapshotStore, page: dict[str, Any]) -> Snapshot | None:
    """The stored snapshot (with its body) that a manifest page with a snapshot names."""
    snapshot = page["fetch"]["snapshot"]
    source_id = snapshot.get("sourceId") or page.get("id", "")
    return store.find(source_id, snapshot["bodyHash"], snapshot.get("fetchedAt", ""))
