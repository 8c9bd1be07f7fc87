"""What the store commands (``scrapy snapshots``, ``scrapy snapshot``) share.

Opening ``TRAVERSE_STORE``, writing text any terminal accepts, a snapshot's
metadata with its ``sourceRef``; ``StoreCommand`` takes the one argument and turns a
``CommandFailed`` into one ``error:`` line on stderr with exit status 1. Defines no
command.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, ClassVar

from scrapy.exceptions import UsageError

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.snapshots.model import Snapshot, manifest_view
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.snapshots.store import SnapshotStore, open_snapshot_store
from traverse_crawl.utils.redact import redact_text


class StoreCommand:
    """What both store commands declare to Scrapy: in a project, no crawler, no log;
    their texts as class attributes.

    A mixin, not a ``ScrapyCommand``: Scrapy would list a command class defined
    here as a ``scrapy common`` command.
    """

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}
    usage = ""  # syntax()
    summary = ""  # short_desc(), for ``scrapy -h``
    description = ""  # long_desc(), for ``scrapy <command> -h``

    def syntax(self) -> str:
        return self.usage

    def short_desc(self) -> str:
        return self.summary

    def long_desc(self) -> str:
        return self.description

    argument = ""  # what the one positional argument is, for the usage error
    exitcode = 0

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError(f"give exactly one {self.argument}")
        self.check_options(opts)
        run_safely(self, self.act, args[0], opts)

    def check_options(self, opts: argparse.Namespace) -> None:
        """Raise ``UsageError`` for options that do not go together."""

    def act(self, argument: str, opts: argparse.Namespace) -> None:
        raise NotImplementedError


def open_store(settings: Any) -> SnapshotStore:
    """``TRAVERSE_STORE``'s store: a directory or ``s3://BUCKET/PREFIX``."""
    try:
        root = TraverseConfig.from_settings(settings).store
        store = open_snapshot_store(root, settings)
    except ConfigError as exc:
        raise CommandFailed(str(exc)) from None
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


def run_safely(command: Any, action: Any, *args: Any) -> None:
    """Run ``action``; a ``CommandFailed`` is one ``error:`` line and exit status 1."""
    try:
        action(*args)
    except CommandFailed as exc:
        write_text(sys.stderr, f"error: {redact_text(str(exc))}\n")
        command.exitcode = 1
