"""``scrapy crawl``, with traverse's settings and arguments checked first.

An invalid setting or argument of the ``traverse`` spider stops the command before
the crawler starts, with one line that names it and exit status 2, instead of a
traceback. With ``LOG_FILE`` set (scrapyd jobs), the line is also logged, since
stderr is not the job's log. Other spiders run exactly as with Scrapy's own command.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import logging
import os
from typing import Any, get_args

from scrapy.commands import ScrapyHelpFormatter
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from traverse_crawl.config.extras import require_extra
from traverse_crawl.config.parsers import parse_choice
from traverse_crawl.config.scrapy_settings import parse_log_level
from traverse_crawl.config.settings import LogFormat, TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.operations import json_log
from traverse_crawl.operations.exit_status import command_checks, crawl_status
from traverse_crawl.rendering.addon import check_render
from traverse_crawl.storage.bucket import BucketLocation
from traverse_crawl.storage.location import is_bucket_url, open_location
from traverse_crawl.utils.redact import redact_text

logger = logging.getLogger(__name__)

_SPIDER_ARGS = ("url", "seeds", "source_id", "content_type")


def check_arguments(spargs: dict[str, str]) -> None:
    """An unknown ``-a`` (``source-id`` for ``source_id``) would be ignored silently.

    Names starting with ``_`` are scrapyd's (``_job``) and pass.
    """
    unknown = sorted(k for k in spargs if k not in _SPIDER_ARGS and not k.startswith("_"))
    if unknown:
        raise ConfigError(
            "arguments",
            f"unknown spider argument(s) {', '.join(unknown)}; accepted: {', '.join(_SPIDER_ARGS)}",
        )


def make_directory(name: str, path: str) -> None:
    """Create ``path``, or say in plain words why it cannot be (exit 2 naming the setting)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(name, f"{path!r} is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ConfigError(name, f"cannot create {path!r}: {exc.strerror or exc}") from None


# The same table as docs/monitoring.md, "Exit status".
EXIT_STATUS = """\
Exit status:
  0  the crawl ran, whatever happened to its pages (failed pages are in the
     manifest, with their error)
  1  something was lost: a manifest, items file or snapshot that could not be
     written for good (counted in the stats as traverse/lost)
  2  an invalid command line or setting, or a service (Redis, the metrics
     port) that cannot be reached at start; nothing was requested
  3  a data-quality check (TRAVERSE_CHECKS) failed and nothing was lost
"""


class _KeepLines(ScrapyHelpFormatter):
    """The description's lines as written (the exit status table)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "".join(indent + line for line in text.splitlines(keepends=True))


class Command(ScrapyCrawlCommand):
    def long_desc(self) -> str:
        return f"{super().long_desc()}\n\n{EXIT_STATUS}"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.formatter_class = _KeepLines

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            super().process_options(args, opts)
            # Scrapy configures logging with LOG_LEVEL before run(): a bad level
            # would end in a traceback there.
            if self.settings is not None and args and args[0] == "traverse":
                command_checks(self.settings)  # run() checks every setting, not the add-on
                try:
                    parse_log_level("LOG_LEVEL", self.settings.get("LOG_LEVEL"))
                    parse_choice(
                        "TRAVERSE_LOG_FORMAT",
                        self.settings.get("TRAVERSE_LOG_FORMAT", "text"),
                        get_args(LogFormat),
                    )
                except ConfigError as exc:
                    raise UsageError(redact_text(str(exc)), print_help=False) from None
        except UsageError as exc:
            if self.settings is None or not json_log.is_json(self.settings) or not str(exc):
                raise
            json_log.write_error(str(exc))  # no log handler exists yet
            raise SystemExit(2) from None

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        if settings is not None and args and args[0] == "traverse":
            try:
                check(settings, opts.spargs)
            except ConfigError as exc:
                self._refuse(settings, exc)
                return
        if not args or args[0] != "traverse" or len(args) > 1 or self.crawler_process is None:
            super().run(args, opts)
            return
        crawler = self._create_crawler(args[0])
        refused: list[ConfigError] = []
        _keep_config_error(self.crawler_process.crawl(crawler, **opts.spargs), refused)
        self.crawler_process.start()
        if refused and settings is not None:
            # A component's own check at start (a bucket that went away between the
            # command's check and the crawler's): the same line and exit status.
            self._refuse(settings, refused[0])
            return
        try:
            stats = crawler.stats  # unset when the crawl never started
        except RuntimeError:
            stats = None
        # 2: an output it could not write at start (nothing was requested); 1: results
        # that could not be written are not a success; 3: the data is there, and it is
        # not what the checks want.
        final = stats.get_stats() if stats is not None else {}
        self.exitcode = crawl_status(final, self.crawler_process.bootstrap_failed)

    def _refuse(self, settings: BaseSettings, exc: ConfigError) -> None:
        """One line naming the setting, exit status 2."""
        if json_log.is_json(settings):  # the line goes to the log handler, as JSON
            logger.error("%s", exc)
            self.exitcode = 2
            return
        if settings.get("LOG_FILE"):  # scrapyd: stderr is not the job log
            logger.error("%s", exc)
        raise UsageError(redact_text(str(exc)), print_help=False) from None


def _keep_config_error(started: Any, refused: list[ConfigError]) -> None:
    """Collect the ``ConfigError`` a crawler's start ends in (Scrapy's task or Deferred
    of ``crawl``), so the command reports it as one line; any other error is left as
    Scrapy reports it."""
    if isinstance(started, asyncio.Future):

        def done(task: asyncio.Future[Any]) -> None:
            if task.cancelled():
                return
            error = task.exception()  # retrieved: asyncio no longer prints it
            if isinstance(error, ConfigError):
                refused.append(error)
            elif error is not None:
                logger.error("the crawl could not start", exc_info=error)

        started.add_done_callback(done)
    elif isinstance(started, Deferred):

        def failed(failure: Failure) -> Failure | None:
            if isinstance(failure.value, ConfigError):
                refused.append(failure.value)
                return None
            return failure

        started.addErrback(failed)


def check(settings: BaseSettings, spargs: dict[str, str]) -> None:
    """Everything that can be wrong before the first request, as a ConfigError.

    With rendering on, that includes a browser that cannot start (docs/rendering.md).
    """
    # Imported here: every ``scrapy`` command imports this module (Scrapy lists its
    # commands), and this one brings in the crawl's frontier and JOBDIR state.
    from traverse_crawl.jobdir.pipeline import jobdir_path, resolve_seeds

    config = TraverseConfig.from_settings(settings)
    check_arguments(spargs)
    seeds, _ = resolve_seeds(
        settings, config, tuple(spargs.get(k) for k in _SPIDER_ARGS), check=True
    )
    check_writable("TRAVERSE_MANIFEST_DIR", config.manifest_dir, settings)
    if config.stats_file:
        if os.path.isdir(config.stats_file):
            raise ConfigError("TRAVERSE_STATS_FILE", f"{config.stats_file!r} is a directory")
        check_writable("TRAVERSE_STATS_FILE", os.path.dirname(config.stats_file) or ".")
    if config.extract is not None:  # the items files, in capture and in replay
        check_writable("TRAVERSE_ITEMS_DIR", config.items_dir, settings)
    if config.mode == "capture":
        check_writable("TRAVERSE_STORE", config.store, settings)
        if config.warc_dir:
            check_writable("TRAVERSE_WARC_DIR", config.warc_dir, settings)
    elif is_bucket_url(config.store):
        check_writable("TRAVERSE_STORE", config.store, settings)  # reachable, the bucket there
    elif os.path.exists(config.store) and not os.path.isdir(config.store):
        raise ConfigError("TRAVERSE_STORE", f"{config.store!r} is not a directory")
    jobdir = jobdir_path(settings)
    if jobdir:
        check_writable("JOBDIR", jobdir)
    check_render(settings)
    for name, extra, on in (
        ("REDIS_URL", "redis", config.redis.enabled),
        ("TRAVERSE_WARC_DIR", "warc", bool(config.warc_dir)),
        ("TRAVERSE_METRICS_PORT", "metrics", bool(config.metrics_port)),
    ):
        if on:
            require_extra(name, extra)
    if config.metrics_port:
        from traverse_crawl.operations.metrics import check_port  # prometheus_client

        check_port(config.metrics_host, config.metrics_port)
    if config.redis.enabled:  # before the reactor: blocking calls are fine here
        from redis.exceptions import RedisError

        from traverse_crawl.distributed.client import DATA_ERRORS, service_error
        from traverse_crawl.distributed.frontier import join_crawl  # redis: slow to import

        try:
            join_crawl(config, seeds)
        except ConfigError:
            raise
        except (RedisError, *DATA_ERRORS) as exc:  # full, or other data under its keys
            raise service_error(config.redis, exc) from None


PROBE_BYTES = 4096  # one filesystem block: a full filesystem refuses it


def check_writable(name: str, path: str, settings: Any = None) -> None:
    """Create ``path`` and write a block to a file in it (synced, so a filesystem that only
    finds out at write-back says so too), so that results are never fetched and then lost:
    a read-only or full filesystem is refused here, naming the setting. For
    ``s3://BUCKET/PREFIX``, reach the endpoint and find the bucket."""
    if is_bucket_url(path):
        location = open_location(name, path, settings or {})
        assert isinstance(location, BucketLocation)
        location.check(name)
        return
    make_directory(name, path)
    probe = ""
    try:
        fd = _open_probe(path)
        if fd < 0:
            probe = os.path.join(path, f".traverse-write-test-{os.getpid()}.tmp")
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise ConfigError(name, f"cannot write in {path!r}: {exc.strerror or exc}") from None
    try:
        if os.write(fd, bytes(PROBE_BYTES)) != PROBE_BYTES:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(fd)
    except OSError as exc:
        raise ConfigError(name, f"cannot write in {path!r}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
        if probe:
            with contextlib.suppress(OSError):
                os.unlink(probe)


def _open_probe(path: str) -> int:
    """A file in ``path`` that never has a name there (Linux's ``O_TMPFILE``), so a process
    killed while probing leaves nothing that a reader of the directory could find; -1
    where the platform or the filesystem has no such files (then a named probe is used)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag:
        return -1
    try:
        return os.open(path, flag | os.O_WRONLY, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return -1
        raise
