"""What the store commands (``scrapy snapshots``, ``scrapy snapshot``) share.

Opening ``TRAVERSE_STORE``, writing text any terminal accepts, a snapshot's
metadata with its ``sourceRef``, and turning a ``CommandFailed`` into one
``error:`` line on stderr with exit status 1. Defines no command.
"""

from __future__ import annotations

import sys
from typing import Any

from scrapy.commands import ScrapyCommand

from traverse_crawl.core.config import TraverseConfig
from traverse_crawl.core.errors import ConfigError
from traverse_crawl.core.snapshot import Snapshot, manifest_view
from traverse_crawl.core.sourceref import build_source_ref
from traverse_crawl.core.store import FilesystemSnapshotStore
from traverse_crawl.exceptions import CommandFailed


def open_store(settings: Any) -> FilesystemSnapshotStore:
    try:
        root = TraverseConfig.from_settings(settings).store
    except ConfigError as exc:
        raise CommandFailed(str(exc)) from None
    store = FilesystemSnapshotStore(root)
    if not store.exists():
        raise CommandFailed(f"no snapshot store at {store.root} (TRAVERSE_STORE)")
    return store


def printable(text: str) -> str:
    """Text that any terminal encoding accepts (lone surrogates as ``\\udXXX``)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def write_text(stream: Any, text: str) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(text.encode("utf-8", "backslashreplace"))
        buffer.flush()
    else:
        stream.write(printable(text))
        stream.flush()


def metadata(snapshot: Snapshot) -> dict[str, Any]:
    """The snapshot without its body, plus its ``sourceRef`` (when one can be built)."""
    out = manifest_view(snapshot)
    try:
        out["sourceRef"] = build_source_ref(snapshot)
    except ValueError:  # an id JavaScript could not encode either (lone surrogate)
        pass
    return out


def run_safely(command: ScrapyCommand, action: Any, *args: Any) -> None:
    try:
        action(*args)
    except CommandFailed as exc:
        write_text(sys.stderr, f"error: {exc}\n")
        command.exitcode = 1
