"""``scrapy extract``: items again, offline, from the store; ``--verify`` an items file.

See docs/extraction.md.

``scrapy extract -s TRAVERSE_EXTRACT=FILE [SEED_ID ...]`` reads the latest manifest of
each seed in ``TRAVERSE_MANIFEST_DIR`` (all, or those named) and the snapshots they
name in ``TRAVERSE_STORE``, and writes each seed's items file in ``TRAVERSE_ITEMS_DIR``
again; it opens no connection. ``scrapy extract --verify ITEMS.jsonl`` checks every
item's evidence against its snapshot: one line per mismatch and exit status 1, else 0.
``scrapy extract --fixtures FIXTURES.jsonl`` extracts each fixture's snapshot again with
the current rules and reports each field equal, changed or missing (docs/extraction.md,
"Fixtures"): exit status 1 when any differs or is not found, else 0.
A bad setting, an unknown seed or an unreadable input: one ``error:`` line, exit 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import ProjectCommand, write_text
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.extraction.setting import EXTRACT_SETTING
from traverse_crawl.manifests.read import Loaded, ManifestError, load_all
from traverse_crawl.snapshots.store import SnapshotStore, open_snapshot_store
from traverse_crawl.storage.location import Location, open_location
from traverse_crawl.utils.redact import redact_text
from traverse_crawl.utils.terminal import escape_controls

if TYPE_CHECKING:
    from traverse_crawl.extraction.extractor import Extractor
    from traverse_crawl.extraction.process import ExtractionPool

# Scrapy imports every command's module at the start of every command, a crawl's too:
# the extraction modules (the rules' regex and TOML parsers, the span matcher) and the
# extraction processes, about 0.1 s, are imported by the functions that use them.

POOL_PAGES = 200  # pages per extraction process beside the first, up to 4 processes


class Command(ProjectCommand, ScrapyCommand):
    def syntax(self) -> str:
        return "[options] [seed id ...] | --verify <items file> | --fixtures <file>"

    def short_desc(self) -> str:
        return "Extract items again from the stored snapshots; verify an items file; run fixtures"

    def long_desc(self) -> str:
        return (
            "Apply TRAVERSE_EXTRACT to the snapshots named by the latest manifest of each "
            "seed (all, or those given) and write the items files again, with no network. "
            "--verify FILE re-reads each item's snapshot by its sourceRef and checks every "
            "evidence entry: exit 1 and one line per mismatch, else 0. --fixtures FILE "
            "extracts each fixture's snapshot again with the current rules: each field "
            "equal, changed or missing; exit 1 when any differs or is not found, else 0."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument(
            "--verify", metavar="FILE", help="check an items file against its snapshots"
        )
        parser.add_argument(
            "--fixtures", metavar="FILE", help="compare items of a trusted run with the rules"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if opts.verify and args:
            raise UsageError("--verify takes one items file and no seed id")
        if opts.fixtures and (args or opts.verify):
            raise UsageError("--fixtures takes one fixtures file, no seed id and no --verify")
        try:
            config = TraverseConfig.from_settings(self.settings)
            if opts.fixtures:
                self.exitcode = fixtures(opts.fixtures, config, self.settings)
            elif opts.verify:
                self.exitcode = verify(opts.verify, config, self.settings)
            else:
                self.exitcode = extract(args, config, self.settings)
        except (ConfigError, ManifestError) as exc:
            write_text(sys.stderr, f"error: {redact_text(str(exc))}\n")
            self.exitcode = 2


class _Escaped(logging.Formatter):
    """``warning: MESSAGE``, its terminal controls escaped (a manifest's URLs and seed ids
    may come from a shared bucket)."""

    def format(self, record: logging.LogRecord) -> str:
        return escape_controls(super().format(record))


def _warnings_to_stderr() -> None:
    # The command runs without Scrapy's log: the pages' warnings go to stderr as lines.
    logger = logging.getLogger("traverse_crawl.extraction")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_Escaped("warning: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False


def extract(seed_ids: list[str], config: TraverseConfig, settings: Any = None) -> int:
    rules = EXTRACT_SETTING.of(config)
    if rules is None:
        raise ConfigError("TRAVERSE_EXTRACT", "not set: name the extraction file (TOML or JSON)")
    store = open_snapshot_store(config.store, settings)
    if not store.exists():
        raise ConfigError("TRAVERSE_STORE", f"no snapshot store at {store.root}")
    manifests = load_all([config.manifest_dir], settings)
    if seed_ids:
        known = {manifest.seed_id for manifest in manifests}
        unknown = [seed for seed in seed_ids if seed not in known]
        if unknown:
            raise ConfigError(
                "SEED_ID", f"no manifest in {config.manifest_dir} for seed {unknown[0]!r}"
            )
        manifests = [manifest for manifest in manifests if manifest.seed_id in seed_ids]
    from traverse_crawl.extraction.extractor import Extractor
    from traverse_crawl.extraction.process import ExtractionPool

    _warnings_to_stderr()
    extractor = Extractor(
        rules, config.max_items_per_page, config.extract_timeout, config.max_item_bytes_per_page
    )
    items = open_location("TRAVERSE_ITEMS_DIR", config.items_dir, settings or {})
    pages = sum(len(m.data["pages"]) for m in manifests)
    # Every page is extracted in an extraction process, with the crawl's hard bound on
    # one page; more than one beside each other for more than a few hundred pages.
    workers = max(1, min(os.cpu_count() or 1, 4, pages // POOL_PAGES))
    pool = ExtractionPool(
        rules, config.max_items_per_page, config.extract_timeout, workers, items=False,
        max_item_bytes=config.max_item_bytes_per_page,
    )  # fmt: skip
    try:
        return _extract_all(manifests, config, extractor, store, pool, items)
    finally:
        pool.close()


def _extract_all(
    manifests: list[Loaded],
    config: TraverseConfig,
    extractor: Extractor,
    store: SnapshotStore,
    pool: ExtractionPool,
    items: Location | None = None,
) -> int:
    from traverse_crawl.extraction.from_store import seed_chunks
    from traverse_crawl.extraction.items import items_path, write_items_file

    status = 0
    for manifest in manifests:
        target = items_path(config.items_dir, manifest.seed_id)
        counts: dict[str, int] = {}
        chunks = seed_chunks(extractor, store, manifest.data, None, counts, pool)
        try:
            write_items_file(target, chunks, items)
        except OSError as exc:
            write_text(sys.stderr, f"error: cannot write {target}: {exc.strerror or exc}\n")
            status = 1
            continue
        line = (
            f"seed {manifest.seed_id}: {counts['items']} item(s) from {counts['pages']} "
            f"page(s) -> {target}"
        )
        write_text(sys.stdout, escape_controls(redact_text(line)) + "\n")
        if counts["unread"] or counts["damaged"]:
            # A page's snapshot is not in the store, or not the capture: its items are lost.
            status = 1
    return status


def fixtures(path: str, config: TraverseConfig, settings: Any = None) -> int:
    from traverse_crawl.extraction.extractor import Extractor
    from traverse_crawl.extraction.fixtures import FixtureRunner

    rules = EXTRACT_SETTING.of(config)
    if rules is None:
        raise ConfigError(
            "TRAVERSE_EXTRACT", "not set: --fixtures extracts with the current rules; name them"
        )
    try:
        handle = open(path, "rb")  # closed below, after the last line
    except OSError as exc:
        raise ConfigError("--fixtures", f"cannot read {path}: {exc.strerror or exc}") from None
    _warnings_to_stderr()
    extractor = Extractor(
        rules,
        config.max_items_per_page,
        config.extract_timeout,
        config.max_item_bytes_per_page,
    )
    runner = FixtureRunner(open_snapshot_store(config.store, settings), extractor)
    try:
        with handle:
            for line in runner.run(iter(handle)):
                write_text(sys.stdout, redact_text(f"{path}: {line}") + "\n")
    except OSError as exc:
        raise ConfigError("--fixtures", f"cannot read {path}: {exc.strerror or exc}") from None
    tally = runner.tally
    summary = (
        f"{tally.fixtures} fixture(s): {tally.equal} field(s) equal, {tally.changed} changed, "
        f"{tally.missing} missing, {tally.not_found} fixture(s) not found"
    )
    write_text(sys.stderr if tally.differs else sys.stdout, summary + "\n")
    return 1 if tally.differs else 0


def verify(path: str, config: TraverseConfig, settings: Any = None) -> int:
    from traverse_crawl.extraction.verify import Verifier, clip

    rules = EXTRACT_SETTING.of(config)
    if rules is None:
        raise ConfigError(
            "TRAVERSE_EXTRACT",
            "not set: --verify extracts every item again with the rules that made it; "
            "name their extraction file",
        )
    try:
        handle = open(path, "rb")  # closed below, after the last line
    except OSError as exc:
        raise ConfigError("--verify", f"cannot read {path}: {exc.strerror or exc}") from None
    verifier = Verifier(
        open_snapshot_store(config.store, settings),
        rules,
        config.max_items_per_page,
        config.extract_timeout,
        config.max_item_bytes_per_page,
    )
    found = 0
    try:
        with handle:
            for mismatch in verifier.verify_lines(iter(handle)):
                found += 1
                write_text(sys.stdout, clip(redact_text(f"{path}: {mismatch}")) + "\n")
    except OSError as exc:
        raise ConfigError("--verify", f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        verifier.close()
    if found:
        write_text(sys.stderr, f"{found} mismatch(es) in {verifier.items} item(s)\n")
        return 1
    write_text(
        sys.stdout,
        clip(f"{path}: {verifier.items} item(s), {verifier.entries} evidence entries verified")
        + "\n",
    )
    return 0
