"""``scrapy snapshot REF``: write one stored snapshot's body and metadata (docs/snapshots.md).

``REF`` is a ``traverse-snapshot:`` sourceRef; the snapshot it names (same page id,
body hash and ``fetchedAt``) is read from ``TRAVERSE_STORE``. Its body goes to stdout
or ``-o FILE``, its metadata as JSON to stderr or ``--meta FILE``. A malformed ref, a
missing store or a ref with no stored snapshot is one ``error:`` line, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import (
    StoreCommand,
    metadata,
    open_store,
    printable,
    write_text,
)
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.snapshots.model import body_bytes
from traverse_crawl.snapshots.source_ref import parse_source_ref


class Command(StoreCommand, ScrapyCommand):
    argument = "sourceRef"
    usage = "[options] <sourceRef>"
    summary = "Write a stored snapshot's body (stdout or -o) and metadata (stderr or --meta)"
    description = (
        "Look up the snapshot a traverse-snapshot: sourceRef names in TRAVERSE_STORE; "
        "write its body (raw bytes for pdf/png/jpeg, UTF-8 text otherwise) to stdout "
        "or -o FILE, and its metadata as JSON to stderr or --meta FILE."
    )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="write the body to FILE")
        parser.add_argument(
            "--meta",
            metavar="FILE",
            help="write the metadata JSON to FILE instead of stderr ('-': stdout, needs -o)",
        )

    def check_options(self, opts: argparse.Namespace) -> None:
        if opts.meta == "-" and opts.output in (None, "-"):
            raise UsageError("--meta - needs -o FILE: stdout carries the body")

    def act(self, ref: str, opts: argparse.Namespace) -> None:
        output: str | None = opts.output
        meta_path: str | None = opts.meta
        parsed = parse_source_ref(ref)
        if parsed is None:
            raise CommandFailed(f"not a traverse-snapshot sourceRef: {printable(ref)}")
        store = open_store(self.settings)
        snapshot = store.find(parsed.source_id, parsed.body_hash, parsed.fetched_at)
        if snapshot is None:
            raise CommandFailed(
                f"no snapshot stored for sourceId {printable(json.dumps(parsed.source_id))} "
                f"with sha256 {printable(parsed.body_hash)} fetched at "
                f"{printable(parsed.fetched_at)} in {store.root}"
            )
        body = body_bytes(snapshot)
        if output in (None, "-"):
            sys.stdout.buffer.write(body)
            sys.stdout.buffer.flush()
        else:
            try:
                with open(output, "wb") as handle:
                    handle.write(body)
            except OSError as exc:
                raise CommandFailed(f"cannot write {output}: {exc.strerror or exc}") from None
        text = json.dumps(metadata(snapshot), indent=2, ensure_ascii=False) + "\n"
        if meta_path is None:
            write_text(sys.stderr, text)
        elif meta_path == "-":
            write_text(sys.stdout, text)
        else:
            try:
                with open(meta_path, "wb") as handle:
                    handle.write(text.encode("utf-8", "backslashreplace"))
            except OSError as exc:
                raise CommandFailed(f"cannot write {meta_path}: {exc.strerror or exc}") from None
