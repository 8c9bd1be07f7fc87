"""Progress of a crawl, per seed: ``TRAVERSE_PROGRESS`` = ``auto`` | ``off`` (docs/settings.md).

``auto``: a live display (rich) when stderr is a terminal, refreshed from the
reactor twice a second; otherwise one INFO line per running seed every
``LOGSTATS_INTERVAL`` seconds (Scrapy's setting; 0 turns it off).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet.task import LoopingCall

from traverse_crawl.config.settings import get_config
from traverse_crawl.crawl.frontier import Frontier
from traverse_crawl.crawl.progress import SeedProgress, log_line, per_minute, slowed_text
from traverse_crawl.politeness.blocking import pushback
from traverse_crawl.signals import seed_started
from traverse_crawl.utils.terminal import escape_controls

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

logger = logging.getLogger(__name__)

REFRESH = 0.5  # seconds between refreshes of the live display
MAX_ROWS = 20  # running seeds shown at once; the rest are counted in the totals row


class ProgressExtension:
    def __init__(self, crawler: Crawler) -> None:
        config = get_config(crawler)
        if config.progress == "off":
            raise NotConfigured
        # JSON logs: stderr is all JSON lines, so the progress is logged, never drawn.
        self.live = config.log_format == "text"
        self.crawler = crawler
        self.interval = crawler.settings.getfloat("LOGSTATS_INTERVAL")
        # The seeds' frontiers (a distributed worker's are local views and not
        # announced: `scrapy crawlstatus` shows that crawl).
        self.frontiers: dict[int, Frontier] = {}
        self.seeds: dict[int, SeedProgress] = {}
        self.last: dict[int, tuple[float, int]] = {}
        self.started = time.monotonic()
        self.pushback = pushback(crawler)  # each origin's back-off and pace
        self.display: LiveDisplay | None = None
        self.loop: LoopingCall | None = None
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self.seed_started, signal=seed_started)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressExtension:
        return cls(crawler)

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        if self.live and sys.stderr.isatty():
            self.display = LiveDisplay()
            self.loop = LoopingCall(self.refresh)
            self.loop.start(REFRESH, now=False)
        elif self.interval > 0:
            self.loop = LoopingCall(self.log)
            self.loop.start(self.interval, now=False)

    def spider_closed(self, spider: Spider) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        if self.display is not None:
            self.refresh()
            self.display.stop()
            self.display = None

    def seed_started(self, frontier: Frontier, seed_key: int) -> None:
        self.frontiers[seed_key] = frontier

    def _running(self) -> list[tuple[int, SeedProgress]]:
        for key, frontier in self.frontiers.items():
            if key not in self.seeds:
                self.seeds[key] = SeedProgress(frontier)
                self.last[key] = (self.started, len(frontier.pages))
        return list(self.seeds.items())

    def log(self) -> None:
        now = time.monotonic()
        for key, seed in self._running():
            figures = seed.figures(self.pushback.slowed(seed.frontier.seed_origin))
            since, before = self.last[key]
            self.last[key] = (now, figures.recorded)
            if not figures.finished:
                rate = per_minute(figures.recorded - before, now - since)
                logger.info("%s", log_line(figures, rate))

    def refresh(self) -> None:
        if self.display is None:
            return
        elapsed = time.monotonic() - self.started
        rows = []
        for key, seed in self._running():
            figures = seed.figures(self.pushback.slowed(seed.frontier.seed_origin))
            rate = per_minute(figures.recorded - self.last[key][1], elapsed)
            rows.append((figures, rate))
        self.display.show(rows)


class LiveDisplay:
    """rich's progress display on stderr, with stderr's log handlers routed through it.

    Log lines still reach stderr: while the display runs, the handlers that wrote
    to stderr write through rich's console, which prints them above the display
    instead of through it. It ends with the final figures.
    """

    def __init__(self) -> None:
        # rich only here: a crawl whose stderr is not a terminal (a service, a
        # pipe, a test) never imports it (about 45 ms of every start-up).
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        # A seed id is shown as the text it is: no markup (``[link=…]`` would be a
        # hyperlink), no emoji code (``:skull:``), its controls escaped (``utils/terminal.py``).
        self.console = Console(file=sys.stderr, emoji=False)
        self.progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} pages"),
            TextColumn("{task.fields[queued]} queued"),
            TextColumn("{task.fields[errors]} errors"),
            TextColumn("{task.fields[rate]:.0f} pages/min"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[slowed]}", markup=False),
            console=self.console,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.tasks: dict[str, TaskID] = {}
        self.totals: TaskID | None = None
        self.rerouted: list[tuple[logging.StreamHandler[Any], Any]] = []
        self.progress.start()
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr:
                self.rerouted.append((handler, handler.setStream(_ConsoleStream(self.console))))

    def show(self, rows: list[tuple[Any, float]]) -> None:
        running = [(f, r) for f, r in rows if not f.finished]
        shown = {f.seed_id for f, _ in running[:MAX_ROWS]}
        for seed_id in list(self.tasks):
            if seed_id not in shown:
                self.progress.remove_task(self.tasks.pop(seed_id))
        for figures, rate in running[:MAX_ROWS]:
            fields = {
                "queued": figures.queued,
                "errors": figures.errors,
                "rate": rate,
                "slowed": slowed_text(figures.slowed),
            }
            if figures.seed_id not in self.tasks:
                self.tasks[figures.seed_id] = self.progress.add_task(  # shown as text, never markup
                    escape_controls(figures.seed_id), total=figures.budget, **fields
                )
            self.progress.update(self.tasks[figures.seed_id], completed=figures.recorded, **fields)
        total = _totals(rows)
        if self.totals is None:
            self.totals = self.progress.add_task("all seeds", **total)
        self.progress.update(self.totals, **total)
        self.progress.refresh()

    def stop(self) -> None:
        self.progress.stop()
        for handler, stream in self.rerouted:
            handler.setStream(stream)


def _totals(rows: list[tuple[Any, float]]) -> dict[str, Any]:
    return {
        "completed": sum(f.recorded for f, _ in rows),
        "total": sum(f.budget for f, _ in rows),
        "queued": sum(f.queued for f, _ in rows),
        "errors": sum(f.errors for f, _ in rows),
        "rate": sum(r for _, r in rows),
        "slowed": "",
    }


class _ConsoleStream:
    """A text stream whose lines rich prints above its live display."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.buffer = ""

    def write(self, text: str) -> int:
        self.buffer += text
        if "\n" in self.buffer:
            lines, self.buffer = self.buffer.rsplit("\n", 1)
            self.console.print(lines, markup=False, highlight=False, emoji=False, soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        if self.buffer:
            self.console.print(
                self.buffer, markup=False, highlight=False, emoji=False, soft_wrap=True
            )
            self.buffer = ""
