"""The garbage collector, out of the crawl's way.

When the spider opens (every component built, no request sent yet), ``gc.freeze()``
moves every object start-up left to the permanent generation, which collections
skip, and the youngest generation is collected less often; all of it is undone when
the spider closes. Hooked before Scrapy's CoreStats (-10).

``freeze_at_exit``, which the project's commands register to run when the process
exits, freezes the heap once more for the interpreter's own shutdown.
"""

from __future__ import annotations

import gc

from traverse_crawl.runtime.process_wide import ProcessWide

# Importing Scrapy, Twisted, lxml and the project leaves some 90,000 objects that live
# as long as the process. CPython's full collections walk all of them: three to four
# times in a 2,000-page crawl, 50-250 ms each, during which the reactor neither reads
# a response nor sends a request (with 50 ms of latency per response, each one emptied
# all 16 download places). And with the default threshold (700 allocations) the
# youngest generation was collected about 400 times per 2,000 pages, 150-170 ms in
# all, mostly examining objects that a page's work frees a moment later anyway; at
# YOUNG_THRESHOLD (the older generations' stay 10 and 10) about 16 times, 35-40 ms.
# Objects the crawl creates are collected as before, only less often.
YOUNG_THRESHOLD = 7000  # ten times CPython's default: a few MB of young objects at most


class FrozenStartupHeap(ProcessWide):
    saved: tuple[int, int, int] | None = None  # the thresholds before the first crawl

    @classmethod
    def apply(cls) -> None:
        # No full collection first: start-up leaves about ten unreachable objects
        # behind (of some 80,000), and walking them all cost 50 ms of every crawl's
        # start-up. The few frozen with the rest are collectable again at the close.
        gc.freeze()
        cls.saved = young, middle, oldest = gc.get_threshold()
        gc.set_threshold(max(YOUNG_THRESHOLD, young), middle, oldest)

    @classmethod
    def undo(cls) -> None:
        if cls.saved is not None:
            gc.unfreeze()
            gc.set_threshold(*cls.saved)
            cls.saved = None


# At its exit the interpreter collects the whole heap while it tears the modules down:
# some 0.2 s of CPU, the same for a plain Scrapy spider, a quarter of a one-page crawl
# (docs/performance.md, "Start-up"). What is frozen is skipped, and the process frees
# its memory by ending anyway. Nothing a crawl writes waits for that collection: its
# files are closed when its spider closes, and logging's exit handler, which flushes the
# log handlers, runs after this one (exit handlers run last registered first). Only
# cyclic garbage left at exit goes unfinalized, as any object left alive at exit does.
def freeze_at_exit() -> None:
    gc.freeze()
