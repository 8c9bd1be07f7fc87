"""Run one ``scrapy`` command and print where extraction's CPU went, per component.

    SCRAPY_SETTINGS_MODULE=traverse_crawl.settings .venv/bin/python bench/extractprofile.py \\
        crawl traverse -a url=... -s TRAVERSE_MODE=capture \\
        -s TRAVERSE_EXTRACT=bench/extract.toml ...

Each component's own CPU time is ``time.thread_time()`` around each call, summed over
the run in whichever thread it ran (the reactor's or the extraction thread), so the
figures hold with extraction in a worker thread, where cProfile (which follows one
thread, and whose ``process_time`` clock charges a function for the other thread's
work) cannot split it. The process line is ``getrusage(RUSAGE_SELF)``: this process's
threads, not the snapshot writer's process. The same command without
``TRAVERSE_EXTRACT`` gives the process CPU to subtract (docs/performance.md,
"Extraction").
"""

from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.getcwd())  # the checkout the command runs from

from scrapy.cmdline import execute

from traverse_crawl.crawl import links
from traverse_crawl.extraction import extractor, spans
from traverse_crawl.extraction import spider_extraction as in_crawl

TOTALS: dict[str, list[float]] = {}  # label -> [seconds, calls]


def account(owner: Any, name: str, label: str) -> None:
    wrapped: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return wrapped(*args, **kwargs)
        finally:
            total = TOTALS.setdefault(label, [0.0, 0])
            total[0] += time.thread_time() - started
            total[1] += 1

    setattr(owner, name, timed)


COMPONENTS = [
    (extractor.Extractor, "extract", "extract (all of it)"),
    (extractor, "parse_body", "  parse"),
    (spans.SourceMap, "_build", "  span map (within the look-ups)"),
    (spans.SourceMap, "span", "  span look-ups"),
    (extractor, "derive", "  re/url/type"),
    (in_crawl, "encode_items", "item lines"),
    (in_crawl.SpiderExtraction, "_keep", "spool"),
    (in_crawl.SpiderExtraction, "_write", "items files"),
    (links, "find_links", "link discovery"),
]


def report(pages: int) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    per = max(pages, 1)
    print(f"process CPU: {cpu:.3f} s, {cpu * 1000 / per:.3f} ms per page ({pages} pages)",
          file=sys.stderr)  # fmt: skip
    for label, (seconds, calls) in TOTALS.items():
        print(f"{label:40} {seconds * 1000 / per:.3f} ms per page ({calls} calls)",
              file=sys.stderr)  # fmt: skip


def main() -> None:
    for owner, name, label in COMPONENTS:
        account(owner, name, label)
    sys.argv = ["scrapy", *sys.argv[1:]]
    try:
        execute()
    except SystemExit:
        pass
    finally:
        report(int(TOTALS.get("link discovery", TOTALS.get("extract (all of it)", [0, 0]))[1]))


if __name__ == "__main__":
    main()
