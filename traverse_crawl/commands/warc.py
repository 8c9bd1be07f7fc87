"""``scrapy warc export`` and ``scrapy warc import`` (docs/web-archives.md).

Export: the snapshots of ``TRAVERSE_STORE`` (all, or those of the seeds named) as WARC
``resource`` records (``warc/export.py``) or a WACZ package (``warc/wacz.py``), written
under a temporary name and renamed when complete. Import: records into snapshots of
page ids ``encodeURIComponent(ID)::URL`` (``warc/importer.py``); a damaged record is
skipped with a ``warning:`` line; the exit status is in docs/web-archives.md.
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
from traverse_crawl.config.extras import require_extra
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.store import open_snapshot_store
from traverse_crawl.utils.terminal import escape_controls
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
        try:
            require_extra("scrapy warc", "warc")
        except ConfigError as exc:
            raise UsageError(str(exc), print_help=False) from None
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
        # A setting or an input that is wrong is a bad command line (2), found before
        # anything is written; a file that cannot be read, or an import that read
        # nothing but damage, is 1 (docs/web-archives.md, "Exit status").
        try:
            config = TraverseConfig.from_settings(self.settings)  # type: ignore[arg-type]
        except ConfigError as exc:
            self._usage_error(str(exc))
            return
        for path in paths:
            problem = _not_readable(path)
            if problem:
                self._usage_error(f"{path}: {problem}")
                return
        # The bound of a crawl's download bounds a payload: DOWNLOAD_MAXSIZE, the add-on's
        # 32 MiB unless set (ProjectCommand applies it, as a crawl's process does).
        max_payload = config.download_maxsize
        store = open_snapshot_store(config.store, self.settings)
        from traverse_crawl.warc.importer import ImportReport, candidates

        report = ImportReport()
        newest: dict[str, str] = {}
        with ExitStack() as stack:
            sources = [s for path in paths for s in _sources(path, stack, report)]
            found = candidates(sources, source_id, report, _records_read, max_payload)
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
            _write(sys.stderr, escape_controls(f"warning: {warning}") + "\n")
        summary = (
            f"imported {report.imported} snapshot(s) from {report.records} record(s) "
            f"in {len(paths)} file(s) into {store.root}; skipped {report.skipped} "
            f"malformed record(s); {report.unreadable} file(s) that could not be read; "
            f"{report.superseded} older record(s) of a page not written; "
            f"{report.not_get} response(s) to a request other than GET not imported; "
            f"{report.unresolved} revisit(s) without their original not imported; "
            f"{report.too_large} record(s) larger than DOWNLOAD_MAXSIZE not imported; "
            f"{report.invalid_metadata} metadata record(s) with invalid fields not used; "
            f"{report.normalised} URL(s) stored in normal form"
        )
        _write(sys.stdout, escape_controls(summary) + "\n")
        if report.unreadable or (report.skipped and not report.whole):  # all damaged
            self.exitcode = 1

    def _usage_error(self, message: str) -> None:
        _write(sys.stderr, escape_controls(f"error: {message}") + "\n")
        self.exitcode = 2


def _not_readable(path: str) -> str:
    """Why ``path`` cannot be imported as a file, or "" when it can be opened."""
    if os.path.isdir(path):
        return "is a directory (give the archive files in it, e.g. DIR/*.warc.gz)"
    try:
        with open(path, "rb"):
            return ""
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be opened: {exc.strerror or exc}"


def _records_read(count: int) -> None:
    _write(sys.stderr, f"... {count} records read\n")


def _progress(snapshots: list[Snapshot]) -> Iterator[Snapshot]:
    for number, snapshot in enumerate(snapshots, 1):
        if number % 1000 == 0:
            _write(sys.stderr, f"... {number} of {len(snapshots)} snapshots\n")
        yield snapshot


def _sources(path: str, stack: ExitStack, report: ImportReport) -> list[Source]:
    """A WARC file, or each WARC inside a WACZ, read in place (``warc/member_stream.py``)."""
    from traverse_crawl.warc.importer import file_source

    try:
        if not zipfile.is_zipfile(path):
            return [file_source(path)]
        archive = stack.enter_context(zipfile.ZipFile(path))
        return [
            (f"{path}!{info.filename}", _member_opener(archive, info), info.file_size)
            for info in archive.infolist()
            if info.filename.startswith("archive/")
            and info.filename.endswith((".warc", ".warc.gz"))
        ]
    except (OSError, zipfile.BadZipFile) as exc:
        report.unreadable += 1
        report.warnings.append(f"{path}: cannot read: {exc}")
        return []


def _member_opener(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    from traverse_crawl.warc.member_stream import MemberStream

    return lambda: MemberStream(archive.open(info), info.file_size)
