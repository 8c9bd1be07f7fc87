"""``scrapy warc export`` and ``scrapy warc import`` (docs/web-archives.md).

Export: the snapshots of ``TRAVERSE_STORE`` (all, or those of the seeds named) as WARC
``resource`` records (``warc/export.py``) or a WACZ package (``warc/wacz.py``), written
under a temporary name and renamed when complete. Import: records into snapshots of
page ids ``encodeURIComponent(ID)::URL`` (``warc/importer.py``); a damaged record is
skipped with a ``warning:`` line, and the import exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import StoreCommand, open_store, run_safely
from traverse_crawl.commands.common import write_text as _write
from traverse_crawl.commands.snapshots import seed_pages
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import FilesystemSnapshotStore
from traverse_crawl.version import __version__

# The WARC modules (warcio, ISA-L) are imported by the subcommand that uses them:
# Scrapy imports every command module at the start of every command, `scrapy crawl`
# included.
if TYPE_CHECKING:
    from traverse_crawl.warc.importer import ImportReport, Source

SOFTWARE = f"traverse_crawl/{__version__} (warcio)"


class Command(StoreCommand, ScrapyCommand):
    usage = "export [SEED_ID ...] -o FILE.warc.gz|FILE.wacz | import FILE ... --source-id ID"
    summary = "Export the snapshot store as WARC/WACZ, or import WARC/WACZ files into it"
    description = (
        "export: the snapshots of TRAVERSE_STORE (all, or those of the seeds named) as WARC "
        "resource records, or a WACZ package. import: the 2xx responses and resources of "
        "WARC/WACZ files as snapshots of page ids <ID>::<URL>; damaged records are skipped "
        "and reported with file and offset."
    )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="export: .warc.gz or .wacz")
        parser.add_argument("--source-id", metavar="ID", help="import: the id of the pages")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ("export", "import"):
            raise UsageError("give 'export' or 'import'")
        if args[0] == "export":
            if not opts.output or not opts.output.endswith((".warc.gz", ".wacz")):
                raise UsageError("export needs -o FILE.warc.gz or -o FILE.wacz")
            run_safely(self, self._export, args[1:], opts.output)
        else:
            if not args[1:] or not opts.source_id:
                raise UsageError("import needs one or more files and --source-id ID")
            run_safely(self, self._import, args[1:], opts.source_id)

    # -- export ----------------------------------------------------------------

    def _export(self, seed_ids: list[str], output: str) -> None:
        store = open_store(self.settings)
        if seed_ids:
            found = [s for seed in seed_ids for s in seed_pages(store, seed)]
            if not found:
                raise CommandFailed(f"no snapshots stored for seed id(s) {', '.join(seed_ids)}")
        else:
            found = list(store.walk())
        found.sort(key=lambda s: (s["sourceId"], s["fetchedAt"]))
        from traverse_crawl.warc.export import write_warc
        from traverse_crawl.warc.records import info_fields
        from traverse_crawl.warc.wacz import write_wacz

        info = info_fields(SOFTWARE, {"source": store.root})
        directory = os.path.dirname(os.path.abspath(output))
        handle, tmp = tempfile.mkstemp(dir=directory, prefix=".export-", suffix=".tmp")
        os.close(handle)
        try:
            if output.endswith(".wacz"):
                count = len(write_wacz(tmp, _progress(found), info, SOFTWARE))
            else:
                with open(tmp, "wb") as out:
                    count = sum(
                        1 for _ in write_warc(out, _progress(found), info, os.path.basename(output))
                    )
            os.replace(tmp, output)
        except OSError as exc:
            raise CommandFailed(f"cannot write {output}: {exc.strerror or exc}") from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        _write(sys.stdout, f"exported {count} snapshot(s) to {output}\n")

    # -- import ----------------------------------------------------------------

    def _import(self, paths: list[str], source_id: str) -> None:
        try:
            root = TraverseConfig.from_settings(self.settings).store  # type: ignore[arg-type]
        except ConfigError as exc:
            raise CommandFailed(str(exc)) from None
        store = FilesystemSnapshotStore(root)
        from traverse_crawl.warc.importer import ImportReport, candidates

        report = ImportReport()
        newest: dict[str, str] = {}
        with ExitStack() as stack:
            sources = [s for path in paths for s in _sources(path, stack, report)]
            found = candidates(sources, source_id, report, _records_read)
            for snapshot in found:
                if newest.get(snapshot["sourceId"], "") > snapshot["fetchedAt"]:
                    report.superseded += 1
                    continue
                try:
                    store.put(snapshot)
                except OSError as exc:
                    raise CommandFailed(f"cannot write to {store.root}: {exc}") from None
                newest[snapshot["sourceId"]] = snapshot["fetchedAt"]
                report.imported += 1
        for warning in report.warnings:
            _write(sys.stderr, f"warning: {warning}\n")
        _write(
            sys.stdout,
            f"imported {report.imported} snapshot(s) from {report.records} record(s) "
            f"in {len(paths)} file(s) into {store.root}; skipped {report.skipped} "
            f"malformed record(s); {report.superseded} older record(s) of a page not written; "
            f"{report.not_get} response(s) to a request other than GET not imported; "
            f"{report.unresolved} revisit(s) without their original not imported; "
            f"{report.normalised} URL(s) stored in normal form\n",
        )


def _records_read(count: int) -> None:
    _write(sys.stderr, f"... {count} records read\n")


def _progress(snapshots: list[Snapshot]) -> Iterator[Snapshot]:
    for number, snapshot in enumerate(snapshots, 1):
        if number % 1000 == 0:
            _write(sys.stderr, f"... {number} of {len(snapshots)} snapshots\n")
        yield snapshot


def _sources(path: str, stack: ExitStack, report: ImportReport) -> list[Source]:
    """A WARC file, or each WARC inside a WACZ (extracted to a temporary file)."""
    from traverse_crawl.warc.importer import file_source

    try:
        if not zipfile.is_zipfile(path):
            return [file_source(path)]
        archive = stack.enter_context(zipfile.ZipFile(path))
        sources = []
        for name in archive.namelist():
            if name.startswith("archive/") and name.endswith((".warc", ".warc.gz")):
                tmp = stack.enter_context(tempfile.NamedTemporaryFile(suffix=".warc"))
                with archive.open(name) as member:
                    while chunk := member.read(1 << 20):
                        tmp.write(chunk)
                tmp.flush()
                sources.append((f"{path}!{name}", _opener(tmp.name), os.path.getsize(tmp.name)))
        return sources
    except (OSError, zipfile.BadZipFile) as exc:
        report.skipped += 1
        report.warnings.append(f"{path}: cannot read: {exc}")
        return []


def _opener(path: str) -> Any:
    return lambda: open(path, "rb")
