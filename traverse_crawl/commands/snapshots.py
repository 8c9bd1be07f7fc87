"""``scrapy snapshots ID``: list the stored snapshots of a page or of a seed (docs/snapshots.md).

Reads ``TRAVERSE_STORE``; needs no crawl and opens no connection. ``ID`` is a page id
or, when no page has that id, a seed id. One line per snapshot, newest first, or with
``--json`` one JSON object per line (the snapshot without its body, plus its
``sourceRef``). An unknown id or a missing store is one ``error:`` line, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from scrapy.commands import ScrapyCommand

from traverse_crawl.commands.common import (
    StoreCommand,
    metadata,
    open_store,
    printable,
    write_text,
)
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import SnapshotStore, sort_newest_first
from traverse_crawl.utils.javascript import encode_uri_component


def seed_pages(store: SnapshotStore, seed_id: str) -> list[Snapshot]:
    """Every stored snapshot whose page id belongs to ``seed_id`` (``<encoded seed id>::``)."""
    try:
        prefix = encode_uri_component(seed_id) + "::"
    except ValueError:
        return []
    found = [s for s in store.walk(seed_id_prefix=prefix) if s["sourceId"].startswith(prefix)]
    return sort_newest_first(found)


class Command(StoreCommand, ScrapyCommand):
    argument = "page id or seed id"
    usage = "[options] <page id or seed id>"
    summary = "List the stored snapshots of a page or a seed"
    description = (
        "List the snapshots in TRAVERSE_STORE of a page id (<seed id>::<url>) or, "
        "when no page has that id, of every page of a seed id: fetchedAt, status, "
        "type, hash prefix and URL, newest first. --json prints full metadata "
        "with the sourceRef of each."
    )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--json",
            action="store_true",
            help="one JSON object per line: the snapshot without its body, plus sourceRef",
        )

    def act(self, source_id: str, opts: argparse.Namespace) -> None:
        as_json: bool = opts.json
        store = open_store(self.settings)
        snapshots = store.list(source_id) or seed_pages(store, source_id)
        if not snapshots:
            raise CommandFailed(
                f"no snapshots stored for page or seed id {printable(json.dumps(source_id))} "
                f"in {store.root}"
            )
        lines = []
        for snapshot in snapshots:
            if as_json:
                lines.append(json.dumps(metadata(snapshot), ensure_ascii=False))
            else:
                lines.append(
                    "  ".join(
                        (
                            snapshot["fetchedAt"],
                            str(snapshot["status"]),
                            snapshot["contentType"],
                            snapshot["bodyHash"][:12],
                            snapshot["url"],
                        )
                    )
                )
        write_text(sys.stdout, "".join(line + "\n" for line in lines))
