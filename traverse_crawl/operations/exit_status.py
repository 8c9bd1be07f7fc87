"""Exit statuses 1, 2 and 3 for any spider of a project with the add-on.

1: what a crawl could not keep for good (a manifest, a JOBDIR or Redis commit, a
snapshot) is counted in ``traverse/lost``; a feed (an items file) Scrapy could not store,
in Scrapy's ``feedexport/failed_count/*``. 2: a bad setting, found by the add-on before
the crawler process exists (``check_at_command_line``). 3: a data-quality check failed
(``checks/failed``, docs/checks.md) and nothing was lost. The table of exit statuses is
in docs/monitoring.md ("Exit status").
"""

from __future__ import annotations

import argparse
import inspect
import logging
import signal
import sys
from collections.abc import Mapping
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import BaseSettings, Settings
from scrapy.utils.log import configure_logging

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.operations import json_log
from traverse_crawl.runtime.pending import outputs_settled, results_settled
from traverse_crawl.stats import LOST, START_REFUSED
from traverse_crawl.utils.redact import redact_text

logger = logging.getLogger(__name__)

FEED_FAILED = "feedexport/failed_count/"

OK = 0
LOST_STATUS = 1
USAGE = 2  # Scrapy's own status for an invalid command line (scrapy/cmdline.py)
CHECK_FAILED = 3
CHECKS_FAILED_STAT = "checks/failed"  # counted by checks/extension.py


def lost_count(stats: Mapping[str, Any]) -> int:
    """How many results the crawl could not keep: its own and the feeds'."""
    feeds = sum(v for k, v in stats.items() if k.startswith(FEED_FAILED) and isinstance(v, int))
    return int(stats.get(LOST) or 0) + feeds


def checks_failed(stats: Mapping[str, Any]) -> bool:
    """Whether a data-quality check of the crawl failed (``TRAVERSE_CHECKS``)."""
    return bool(stats.get(CHECKS_FAILED_STAT))


def crawl_status(stats: Mapping[str, Any], process_failed: bool = False) -> int:
    """The exit status of a crawl that ran, by its final stats: 2 when it refused to
    start (an output it could not write), else 1 when something was lost (or the
    process failed), else 3 when a check failed, else 0 (docs/monitoring.md, "Exit status")."""
    if stats.get(START_REFUSED):
        return USAGE
    if process_failed or lost_count(stats):
        return LOST_STATUS
    if checks_failed(stats):
        return CHECK_FAILED
    return OK


def running_command() -> Any:
    """The command object ``scrapy.cmdline.execute`` runs (None outside the command
    line): its ``exitcode`` is what the process exits with."""
    execute = getattr(sys.modules.get("scrapy.cmdline"), "execute", None)
    code = getattr(execute, "__code__", None)
    frame = inspect.currentframe()
    while code is not None and frame is not None:
        if frame.f_code is code:
            return frame.f_locals.get("cmd")
        frame = frame.f_back
    return None


def running_process() -> Any:
    """The Scrapy process whose handler takes SIGTERM now (None: no such process)."""
    handler = signal.getsignal(signal.SIGTERM)
    # A bound method of the process (Scrapy's own handler), or traverse's two-signal
    # stop, which names the process it was installed into (runtime/stop.py).
    process = getattr(handler, "__self__", None) or getattr(handler, "process", None)
    return process if hasattr(process, "bootstrap_failed") else None


class LostResultsExitStatus:
    """Extension: a crawl that lost something ends the ``scrapy crawl`` process with 1.

    Scrapy's crawl command exits 1 when its process says a crawl failed
    (``bootstrap_failed``); that is the one place a component can set the status.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.process: Any = None
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LostResultsExitStatus:
        return cls(crawler)

    def engine_started(self) -> None:
        self.process = running_process()

    async def engine_stopped(self) -> None:
        await results_settled(self.crawler)
        await outputs_settled(self.crawler)
        stats = self.crawler.stats.get_stats() if self.crawler.stats is not None else {}
        lost = lost_count(stats)
        if not lost and checks_failed(stats):
            logger.error("%d check(s) failed: exit status 3", stats[CHECKS_FAILED_STAT])
            # Scrapy's crawl command sets 1 for a failed process and leaves any other
            # status as it finds it: the process exits with this one.
            command = running_command()
            if command is not None and not getattr(command, "exitcode", 0):
                command.exitcode = CHECK_FAILED
            return
        if not lost:
            return
        logger.error("%d result(s) could not be written for good: exit status 1", lost)
        process = self.process or running_process()
        if process is not None:
            process.bootstrap_failed = True


# Set on the settings object by a command that checks the traverse settings itself (the
# project's ``crawl`` command for the ``traverse`` spider, with its further checks).
CHECKED_BY_COMMAND = "checked_by_traverse_command"


def command_checks(settings: BaseSettings) -> None:
    setattr(settings, CHECKED_BY_COMMAND, True)


def command_line_running() -> bool:
    """Whether Scrapy's command line runs this: ``scrapy ...`` and scrapyd's jobs call
    ``scrapy.cmdline.execute``; a script that builds a crawler process does not."""
    execute = getattr(sys.modules.get("scrapy.cmdline"), "execute", None)
    code = getattr(execute, "__code__", None)
    frame = inspect.currentframe()
    while code is not None and frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def check_at_command_line(settings: BaseSettings) -> None:
    """A bad setting ends a ``scrapy`` command that crawls (``scrapy crawl myspider`` in a
    user's project, a scrapyd job) with one line naming it and exit status 2, before
    any crawler exists.

    Called by the add-on's ``update_pre_crawler_settings``, as the crawler process is
    built. Scrapy maps its ``UsageError`` to 2 only around a command's ``run``; the
    process is built before it, and a crawler applies the add-on's settings only once
    the reactor runs, where an error can only fail the crawl (exit 1, with a
    traceback). So the line is written here and the command ends as Scrapy ends a
    usage error. Outside the command line (a script's crawler process) nothing is
    checked here: the crawler raises the same ``ConfigError`` when it starts.
    """
    if getattr(settings, CHECKED_BY_COMMAND, False) or not command_line_running():
        return
    try:
        TraverseConfig.from_settings(settings)
    except ConfigError as exc:
        report_bad_setting(settings, exc)
        raise SystemExit(USAGE) from None


def report_bad_setting(settings: BaseSettings, exc: ConfigError) -> None:
    """As the ``crawl`` command reports it: on stderr (a JSON line with
    ``TRAVERSE_LOG_FORMAT=json``), and in ``LOG_FILE`` when one is set (scrapyd's job log)."""
    message = redact_text(str(exc))
    if settings.get("LOG_FILE"):
        try:  # the crawl's own log handler, as it would have been built
            configure_logging(settings if isinstance(settings, Settings) else Settings(settings))
        except Exception:  # a log setting that cannot be used: stderr only
            pass
        else:
            logging.getLogger("traverse_crawl").error("%s", message)
            if json_log.is_json(settings):
                return
    if json_log.is_json(settings):
        json_log.write_error(message)
    else:
        # As argparse words a usage error (Scrapy's own): "<program>: error: ...".
        sys.stderr.write(f"{argparse.ArgumentParser(add_help=False).prog}: error: {message}\n")
        sys.stderr.flush()
