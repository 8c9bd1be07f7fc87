"""``scrapy report MANIFEST_OR_DIR ... -o report.html``: a crawl as one HTML page (docs/reports.md).

The file is self-contained (``reports/html.py``): it opens from disk in any browser
and makes no request. A seed's items file (``NAME.jsonl`` for the manifest
``NAME.json``, beside the manifest or in ``TRAVERSE_ITEMS_DIR``) adds its items per
type and the fields most often missing. The store is read only for manifests written without the
optional ``discoveredFrom``/``bodySize`` fields (Traverse's own, or older ones).
Exit status 0; 2 with one ``error:`` line naming the file for an unreadable or
non-manifest input; 1 when the report cannot be written.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import ProjectCommand, open_store, write_text
from traverse_crawl.crawl.links import discover_links
from traverse_crawl.fetch import urls
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.manifests.read import (
    CHECKS_SUFFIX,
    ManifestError,
    load_all,
    read_bytes,
    skipped_path,
    stored_snapshot,
)
from traverse_crawl.reports import diff
from traverse_crawl.reports.items_file import DEFAULT_ITEMS_DIR, items_path, scan
from traverse_crawl.reports.model import (
    ItemsSummary,
    Skipped,
    build_seed,
    derive_parents,
    items_summary,
    ok,
    skipped_summary,
)
from traverse_crawl.snapshots.model import body_size
from traverse_crawl.snapshots.store import SnapshotStore, shown_name
from traverse_crawl.storage.location import is_bucket_url
from traverse_crawl.utils.atomic import atomic_write_text


class Command(ProjectCommand, ScrapyCommand):
    def syntax(self) -> str:
        return "[options] <manifest or dir> ... -o report.html"

    def short_desc(self) -> str:
        return "Write a self-contained HTML report of crawls (totals, depths, tree, changes)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "-o", "--output", metavar="FILE", default="report.html", help="default: report.html"
        )
        parser.add_argument(
            "--against",
            metavar="OLD",
            action="append",
            help="an older crawl's manifest or directory: show what changed (repeatable)",
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("give at least one manifest or manifest directory")
        try:
            loaded = load_all(args, self.settings)
            older = load_all(opts.against, self.settings) if opts.against else None
        except ManifestError as exc:
            write_text(sys.stderr, f"error: {exc}\n")
            self.exitcode = 2
            return
        store = self._store()
        items_dir = items_directory(self.settings)
        seeds = []
        # A manifest named after a seed id that holds a URL's password is shown by a
        # glob of its name (docs/snapshots.md): the report is shared beyond the crawl.
        seed_ids = {m.seed_id for m in loaded}

        def shown(path: str) -> str:
            for seed_id in seed_ids:
                path = shown_name(path, seed_id)
            return path

        for manifest in loaded:
            notes = enrich(manifest.data, store)
            changes = None
            if older is not None:
                match = [m.data for m in older if m.seed_id == manifest.seed_id]
                changes = diff.diff(match, [manifest.data])
            seed = build_seed(manifest.data, shown(manifest.path), changes)
            seed.notes.extend(notes)
            seed.skipped = read_skipped(manifest.path, shown, self.settings)
            seed.items = read_items(manifest.path, manifest.data, items_dir, shown)
            seed.checks = read_checks(manifest.path, shown, self.settings)
            seeds.append(seed)
        against = [shown(path) for path in opts.against] if opts.against else opts.against
        # The page's renderer only here: Scrapy imports every command module at the
        # start of every command, `scrapy crawl` included.
        from traverse_crawl.reports import html as reporthtml

        html = reporthtml.page(seeds, [shown(m.path) for m in loaded], against)
        try:
            atomic_write_text(opts.output, html)
        except OSError as exc:
            write_text(sys.stderr, f"error: cannot write {opts.output}: {exc.strerror or exc}\n")
            self.exitcode = 1
            return
        write_text(sys.stdout, f"report: {os.path.abspath(opts.output)}\n")

    def _store(self) -> SnapshotStore | None:
        try:
            return open_store(self.settings)
        except CommandFailed:
            return None


def read_skipped(
    manifest_path: str, shown: Callable[[str], str], settings: Any = None
) -> Skipped | None:
    """The counts of the manifest's ``.skipped.jsonl`` (``TRAVERSE_SKIPPED``), if it has one."""
    path = skipped_path(manifest_path) if manifest_path.endswith(".json") else None
    if path is None or not (is_bucket_url(path) or os.path.isfile(path)):
        return None
    try:
        if is_bucket_url(path):
            data = read_bytes(path, settings)
            return None if data is None else skipped_summary(io.BytesIO(data), shown(path))
        with open(path, "rb") as lines:
            return skipped_summary(lines, shown(path))
    except OSError as exc:
        write_text(sys.stderr, f"warning: cannot read {shown(path)}: {exc.strerror or exc}\n")
        return None


def read_checks(
    manifest_path: str, shown: Callable[[str], str], settings: Any = None
) -> tuple[dict[str, Any], str] | None:
    """The seed's checks file beside its manifest (``TRAVERSE_CHECKS``), if it has one."""
    path = manifest_path.removesuffix(".json") + CHECKS_SUFFIX
    try:
        data = read_bytes(path, settings)
        doc = None if data is None else json.loads(data)
    except (OSError, ValueError) as exc:
        write_text(sys.stderr, f"warning: cannot read {shown(path)}: {exc}\n")
        return None
    return (doc, shown(path)) if isinstance(doc, dict) else None


def items_directory(settings: Any) -> str:
    """``TRAVERSE_ITEMS_DIR``, read as the crawl reads it; only looked in, never written."""
    value = settings.get("TRAVERSE_ITEMS_DIR") if settings is not None else None
    return str(value) if value is not None and str(value).strip() else DEFAULT_ITEMS_DIR


def read_items(
    manifest_path: str, manifest: dict[str, Any], items_dir: str, shown: Callable[[str], str]
) -> ItemsSummary | None:
    """The counts of the seed's items file: ``NAME.jsonl`` beside the manifest
    ``NAME.json`` (a crawl kept together), else in ``TRAVERSE_ITEMS_DIR``."""
    if not manifest_path.endswith(".json"):
        return None
    beside = items_path(manifest_path)
    for path in (beside, os.path.join(items_dir, os.path.basename(beside))):
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                return items_summary(scan(handle), manifest, shown(path))
        except OSError as exc:
            write_text(sys.stderr, f"warning: cannot read {shown(path)}: {exc.strerror or exc}\n")
            return None
    return None


def enrich(manifest: dict[str, Any], store: SnapshotStore | None) -> list[str]:
    """Fill ``discoveredFrom``/``bodySize`` from the store where the manifest lacks them."""
    pages: list[dict[str, Any]] = manifest["pages"]
    # A manifest that records discoverers leaves them out only for sitemap URLs, which
    # no page discovered; only one without any (an older one, Traverse's) needs the store.
    need_parents = len(pages) > 1 and not any("discoveredFrom" in p for p in pages)
    need_sizes = any(ok(p) and "bodySize" not in p for p in pages)
    if not (need_parents or need_sizes) or store is None:
        return []
    origin = urls.origin(str(manifest["seed"].get("url", "")))
    bodies = 0

    def links_of(page: dict[str, Any]) -> list[str] | None:
        nonlocal bodies
        snapshot = stored_snapshot(store, page)
        if snapshot is None:
            return None
        bodies += 1
        if "bodySize" not in page:
            page["bodySize"] = body_size(snapshot)
        if snapshot["contentType"] != "html" or not urls.same_origin(snapshot["url"], origin):
            return []
        return discover_links(snapshot["body"], snapshot["url"], origin)

    filled = derive_parents(pages, links_of)
    return [
        f"This manifest lacks discoveredFrom/bodySize: {bodies} stored bodies were read "
        f"from {store.root}; {filled} discoverer(s) derived by replaying link discovery."
    ]
