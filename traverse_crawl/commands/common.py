"""What the project's commands that build no crawler share.

``ProjectCommand``, their base: the add-on's settings and the log a crawl's process
would have (``take_addon_settings``). For the store commands (``scrapy snapshots``,
``scrapy snapshot``, ``scrapy warc``, ``scrapy crawlstatus``): opening
``TRAVERSE_STORE``, writing text any terminal accepts, a snapshot's metadata with its
``sourceRef``; ``StoreCommand`` takes the one argument and turns a ``CommandFailed``
into one ``error:`` line on stderr with exit status 1. Defines no command.
"""

from __future__ import annotations

import argparse
import logging
import pprint
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.addons import AddonManager
from scrapy.exceptions import UsageError
from scrapy.settings import Settings, overridden_settings
from scrapy.utils.log import configure_logging, log_scrapy_info

from traverse_crawl.config.scrapy_settings import parse_log_level
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.operations.exit_status import command_checks
from traverse_crawl.snapshots.model import Snapshot, manifest_view
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.snapshots.store import SnapshotStore, open_snapshot_store
from traverse_crawl.utils.redact import redact_text

if TYPE_CHECKING:
    from scrapy.commands import ScrapyCommand as _Command
else:
    _Command = object

logger = logging.getLogger(__name__)


def take_addon_settings(settings: Settings) -> None:
    """The settings and the log of a crawl's process, for a command that builds no crawler.

    Scrapy applies add-ons only where it builds a crawler process
    (``scrapy/crawler.py``, ``CrawlerProcessBase``): first each add-on's
    ``update_pre_crawler_settings``, then the log from the settings; each crawler then
    runs ``update_settings``. This is the process's stage, by Scrapy's own function, so
    every value ``traverse_crawl.Addon`` sets (``DOWNLOAD_MAXSIZE``, ``LOG_LEVEL``, ...
    docs/settings.md) is the command's too, at the add-on's priority: the project's
    settings module (scrapy.cfg's or ``SCRAPY_SETTINGS_MODULE``'s) and ``-s`` win over
    it, Scrapy's defaults lose. The component dictionaries, which only a crawler
    builds from, are left to ``update_settings``.

    Each command checks the settings it reads and fails in its own documented way,
    so the add-on's check of a crawl's settings at the command line is not run.
    Without ``LOG_ENABLED`` (off for these commands unless ``-L``, ``--logfile`` or
    ``-s LOG_ENABLED=True``) or ``LOG_FILE``, no log is configured: Python's own
    warnings on stderr stay as they were, debug and info lines are not shown. With
    one, it starts as a crawl's does: Scrapy's version lines, then the settings that
    differ from Scrapy's defaults.
    """
    command_checks(settings)
    AddonManager.load_pre_crawler_settings(settings)
    if not (settings.get("LOG_FILE") or settings.getbool("LOG_ENABLED")):
        return
    try:
        parse_log_level("LOG_LEVEL", settings.get("LOG_LEVEL"))
    except ConfigError as exc:  # Scrapy's handler would end in a traceback
        raise UsageError(str(exc), print_help=False) from None
    configure_logging(settings)
    log_scrapy_info(settings)
    overridden = pprint.pformat(dict(overridden_settings(settings)))
    logger.info("Overridden settings:\n%(settings)s", {"settings": overridden})


class ProjectCommand(_Command):
    """The base of the project's commands that build no crawler: in a project, no
    crawler, no log unless asked; the add-on's settings once the command line is read.

    A mixin, not a ``ScrapyCommand`` (each command is ``class Command(ProjectCommand,
    ScrapyCommand)``): Scrapy would list a command class defined here as a
    ``scrapy common`` command.
    """

    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)  # -s, -L, --logfile, --nolog
        assert self.settings is not None  # set by scrapy.cmdline before this
        take_addon_settings(self.settings)


class StoreCommand(ProjectCommand):
    """What the store commands declare to Scrapy: their texts as class attributes."""

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
