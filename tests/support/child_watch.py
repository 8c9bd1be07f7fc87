"""An extension for tests of a crawl's child process (replay's reader, the extraction
process): it notes the child's pid at each response, and SIGKILLs it at ``kill_at``."""

from __future__ import annotations

import os
import signal
from typing import Any, ClassVar

from scrapy import signals
from scrapy.crawler import Crawler


class ChildWatch:
    """Subclasses say which child (``child``) and keep their own ``pids``."""

    pids: ClassVar[list[int]]
    kill_at: ClassVar[int | None] = None

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.responses = 0
        crawler.signals.connect(self.response, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChildWatch:
        return cls(crawler)

    def child(self) -> int | None:
        """The child's pid, once it runs."""
        raise NotImplementedError

    def response(self, **_: Any) -> None:
        self.responses += 1
        pid = self.child()
        if pid is None:
            return
        if pid not in self.pids:
            self.pids.append(pid)
        if self.responses == self.kill_at:
            os.kill(pid, signal.SIGKILL)
