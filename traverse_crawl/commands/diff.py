"""``scrapy diff OLD NEW``: what changed between two crawls (docs/reports.md).

OLD and NEW are manifests or manifest directories; the classes are
``reports/diff.py``'s. Exit status 0, or with ``--exit-code`` 1 when anything differs;
2, with one ``error:`` line naming the file, for an unreadable or non-manifest input.
Needs no store, except for ``--bodies`` (``TRAVERSE_STORE``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import open_store, write_text
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.manifests.read import ManifestError, load_all, stored_snapshot
from traverse_crawl.reports import diff as difflib_
from traverse_crawl.snapshots.model import BINARY_TYPES
from traverse_crawl.snapshots.store import SnapshotStore

DEFAULT_BODY_LINES = 40


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options] <old manifest or dir> <new manifest or dir>"

    def short_desc(self) -> str:
        return "Show which pages were added, removed, changed, failed or recovered"

    def long_desc(self) -> str:
        return (
            "Compare two crawls' manifests (files or manifest directories, seeds matched "
            "by id): each URL is added, removed, changed, unchanged, failed or recovered. "
            "Prints the counts, then the URLs of each class except unchanged."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
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
            raise UsageError("give OLD and NEW: two manifests or manifest directories")
        if opts.bodies_lines < 1:
            raise UsageError("--bodies-lines must be at least 1")
        try:
            old = load_all([args[0]], self.settings)
            new = load_all([args[1]], self.settings)
        except ManifestError as exc:
            write_text(sys.stderr, f"error: {exc}\n")
            self.exitcode = 2
            return
        changes = difflib_.diff([m.data for m in old], [m.data for m in new])
        bodies = self._bodies(changes, opts.bodies_lines) if opts.bodies else None
        if opts.json:
            text = json.dumps(difflib_.to_json(changes, bodies), ensure_ascii=False) + "\n"
        else:
            text = difflib_.to_text(changes, bodies)
        write_text(sys.stdout, text)
        if opts.exit_code and difflib_.differs(changes):
            self.exitcode = 1

    def _bodies(self, changes: list[difflib_.Change], max_lines: int) -> dict[int, list[str]]:
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
    return difflib_.body_diff(texts[0], texts[1], max_lines)
