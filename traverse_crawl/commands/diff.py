"""``scrapy diff OLD NEW``: what changed between two crawls (docs/reports.md).

OLD and NEW are manifests or manifest directories; the classes are
``reports/diff.py``'s. With ``--items``, they are items files or directories of them,
and the classes ``reports/items_diff.py``'s. Exit status 0, or with ``--exit-code`` 1
when anything differs; 2, with one ``error:`` line naming the file, for an unreadable
or non-manifest input (with ``--items``: an unreadable file; a line that is not an
item is a ``warning:`` line). Needs no store, except for ``--bodies`` (``TRAVERSE_STORE``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import ProjectCommand, open_store, write_text
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.manifests.read import ManifestError, load_all, stored_snapshot
from traverse_crawl.snapshots.model import BINARY_TYPES
from traverse_crawl.snapshots.store import SnapshotStore

if TYPE_CHECKING:
    from traverse_crawl.reports.diff import Change

# Scrapy imports every command's module at the start of every command, a crawl's too:
# the diff and items-diff modules are imported by the methods that use them.

DEFAULT_BODY_LINES = 40
OUTPUT_CHUNK = 2**16  # characters of output gathered before one write


class Command(ProjectCommand, ScrapyCommand):
    def syntax(self) -> str:
        return (
            "[options] <old manifest or dir> <new manifest or dir> (--items: items files or dirs)"
        )

    def short_desc(self) -> str:
        return "Show what changed between two crawls: pages, or with --items, extracted items"

    def long_desc(self) -> str:
        return (
            "Compare two crawls' manifests (files or manifest directories, seeds matched "
            "by id): each URL is added, removed, changed, unchanged, failed or recovered. "
            "Prints the counts, then the URLs of each class except unchanged. With "
            "--items, compare two items files (or directories of them): items matched by "
            "type, URL and order on the page are added, removed, changed or unchanged, "
            "and each changed item's fields are shown old -> new."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--items",
            action="store_true",
            help="OLD and NEW are items files or directories: compare the extracted items",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument(
            "--exit-code", action="store_true", help="exit 1 when anything differs, else 0"
        )
        parser.add_argument(
            "--bodies",
            action="store_true",
            help="show a text diff of each changed page's bodies (needs TRAVERSE_STORE)",
        )
        parser.add_argument(
            "--bodies-lines",
            type=int,
            default=DEFAULT_BODY_LINES,
            metavar="N",
            help=f"at most N diff lines per page (default {DEFAULT_BODY_LINES})",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            what = (
                "items files or directories" if opts.items else "manifests or manifest directories"
            )
            raise UsageError(f"give OLD and NEW: two {what}")
        if opts.bodies_lines < 1:
            raise UsageError("--bodies-lines must be at least 1")
        if opts.items:
            if opts.bodies:
                raise UsageError("--bodies compares pages: leave it out with --items")
            self._items(args[0], args[1], opts)
            return
        try:
            old = load_all([args[0]], self.settings)
            new = load_all([args[1]], self.settings)
        except ManifestError as exc:
            write_text(sys.stderr, f"error: {exc}\n")
            self.exitcode = 2
            return
        from traverse_crawl.reports import diff as difflib_

        changes = difflib_.diff([m.data for m in old], [m.data for m in new])
        bodies = self._bodies(changes, opts.bodies_lines) if opts.bodies else None
        if opts.json:
            text = json.dumps(difflib_.to_json(changes, bodies), ensure_ascii=False) + "\n"
        else:
            text = difflib_.to_text(changes, bodies)
        write_text(sys.stdout, text)
        if opts.exit_code and difflib_.differs(changes):
            self.exitcode = 1

    def _items(self, old_path: str, new_path: str, opts: argparse.Namespace) -> None:
        from traverse_crawl.reports import items_diff
        from traverse_crawl.reports.items_file import ItemsError, items_files

        try:
            old, new = items_files([old_path]), items_files([new_path])
        except ItemsError as exc:
            write_text(sys.stderr, f"error: {exc}\n")
            self.exitcode = 2
            return

        def warn(text: str) -> None:
            write_text(sys.stderr, f"warning: {text}\n")

        changes = items_diff.compare(old, new, warn)
        if opts.exit_code and changes.differs():
            self.exitcode = 1
        render = items_diff.to_json if opts.json else items_diff.to_text
        pending: list[str] = []
        size = 0
        try:
            for piece in render(changes, warn):  # streamed: the output is as large as the data
                pending.append(piece)
                size += len(piece)
                if size >= OUTPUT_CHUNK:
                    write_text(sys.stdout, "".join(pending))
                    pending, size = [], 0
            write_text(sys.stdout, "".join(pending))
        except BrokenPipeError:
            # The reader stopped (``| head``): stop writing, as line-oriented tools do.
            # stdout now points at /dev/null, so the interpreter's last flush cannot fail.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())

    def _bodies(self, changes: list[Change], max_lines: int) -> dict[int, list[str]]:
        try:
            store = open_store(self.settings)
        except CommandFailed as exc:
            write_text(sys.stderr, f"warning: --bodies: {exc}; body diffs not shown\n")
            return {}
        out = {}
        for index, change in enumerate(changes):
            if change.kind == "changed" and change.old and change.new:
                shown = body_lines(store, change.old, change.new, max_lines)
                if shown is not None:
                    out[index] = shown
        return out


def body_lines(
    store: SnapshotStore, old: dict[str, Any], new: dict[str, Any], max_lines: int
) -> list[str] | None:
    """The bounded body diff of one changed page, or a line saying why there is none."""
    texts = []
    for page in (old, new):
        snapshot = page["fetch"].get("snapshot")
        if snapshot is None:
            return None  # an error that changed kind: no bodies to compare
        if snapshot.get("contentType") in BINARY_TYPES:
            return [f"({snapshot['contentType']}: binary, no text diff)"]
        found = stored_snapshot(store, page)
        if found is None:
            return [f"(body {snapshot['bodyHash'][:12]} is not in {store.root})"]
        texts.append(found["body"])
    from traverse_crawl.reports import diff as difflib_

    return difflib_.body_diff(texts[0], texts[1], max_lines)
