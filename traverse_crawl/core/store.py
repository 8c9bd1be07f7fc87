"""Traverse's filesystem snapshot store (SPEC §12), readable by both implementations.

Layout: ``<root>/<source_dir_name(id)>/<fetchedAt with ":"→"-">-<hash[:12]>.json``.
File text: ``json.dumps(snapshot, indent=2, ensure_ascii=False)``, no final newline;
binary bodies as ``bodyBytesBase64``, the last key. Writes are atomic.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
import re
from typing import Any

from traverse_crawl.core.atomic import atomic_write_text
from traverse_crawl.core.snapshot import Snapshot

logger = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def source_dir_name(source_id: str) -> str:
    """SPEC §12: sanitise, trim ``-``, cut to 80, fall back to ``source``, add 8 hex."""
    name = _UNSAFE.sub("-", source_id).strip("-")[:80] or "source"
    digest = hashlib.sha256(source_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name}-{digest}"


def file_name(snapshot: Snapshot) -> str:
    return f"{snapshot['fetchedAt'].replace(':', '-')}-{snapshot['bodyHash'][:12]}.json"


def serialize(snapshot: Snapshot) -> str:
    data = {key: value for key, value in snapshot.items() if key != "bodyBytes"}
    if "bodyBytes" in snapshot:
        data["bodyBytesBase64"] = base64.b64encode(snapshot["bodyBytes"]).decode("ascii")
    return json.dumps(data, indent=2, ensure_ascii=False)


def deserialize(text: str) -> Snapshot | None:
    """A stored snapshot, or None when the text is not one (foreign or damaged)."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    if "bodyBytesBase64" in data:
        encoded = data.pop("bodyBytesBase64")
        if not isinstance(encoded, str):
            return None
        try:
            data["bodyBytes"] = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            return None
    for key in ("sourceId", "url", "fetchedAt", "contentType", "body", "bodyHash"):
        if not isinstance(data.get(key), str):
            return None
    if not isinstance(data.get("status"), int) or isinstance(data.get("status"), bool):
        return None
    return data


def _order_key(snapshot: Snapshot) -> tuple[str, str]:
    return (snapshot["fetchedAt"], snapshot["bodyHash"])


class FilesystemSnapshotStore:
    """put / latest / get / list, with Traverse's newest-first order."""

    def __init__(self, root: str) -> None:
        self.root = root

    def directory(self, source_id: str) -> str:
        return os.path.join(self.root, source_dir_name(source_id))

    def put(self, snapshot: Snapshot) -> str:
        """Write atomically; the same fetchedAt and hash prefix overwrite (SPEC §12)."""
        path = os.path.join(self.directory(snapshot["sourceId"]), file_name(snapshot))
        atomic_write_text(path, serialize(snapshot))
        return path

    def list(self, source_id: str) -> list[Snapshot]:
        directory = self.directory(source_id)
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        snapshots = []
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(directory, name), encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue
            parsed = deserialize(text)
            if parsed is not None:
                snapshots.append(parsed)
        snapshots.sort(key=_order_key, reverse=True)
        return snapshots

    def latest(self, source_id: str) -> Snapshot | None:
        found = self.list(source_id)
        return found[0] if found else None

    def get(self, source_id: str, hash_or_prefix: str) -> Snapshot | None:
        for snapshot in self.list(source_id):
            if snapshot["bodyHash"].startswith(hash_or_prefix):
                return snapshot
        return None

    def exists(self) -> bool:
        return os.path.isdir(self.root)
