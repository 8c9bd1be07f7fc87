"""A crawl's start-up objects are out of the garbage collector's way.

Importing Scrapy, Twisted and lxml leaves some 90,000 objects that live
as long as the process; a full collection walks them all, stopping the reactor
for 50-250 ms three or four times in a 2,000-page crawl (no response read, no
request sent). The crawl freezes them when the
spider opens (``runtime/heap_extension.py``), so that a full collection during the crawl
walks only what the crawl itself created, and unfreezes them when it closes; meanwhile
the youngest generation is collected ten times less often.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

from tests.support.heapprobe import probed_crawl
from tests.support.server import Server
from traverse_crawl.runtime.heap_extension import YOUNG_THRESHOLD


def test_startup_objects_are_frozen_during_the_crawl_only(server: Server, tmp_path):
    default_threshold = gc.get_threshold()[0]  # 700, unless this interpreter was tuned
    server.site({"/index.html": '<a href="/a.html">a</a>', "/a.html": "<p>a</p>"})
    _, seen = probed_crawl(server, tmp_path)
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    assert len(json.loads(manifest.read_text(encoding="utf-8"))["pages"]) == 2
    # Mid-crawl: the start-up objects are frozen, and the oldest generation, which
    # a full collection walks, holds a small part of what they are.
    assert seen["frozen"] > 50_000, seen
    assert seen["oldest"] < seen["frozen"] // 10, seen
    # The youngest generation is collected ten times less often during the crawl.
    assert seen["threshold"] == max(YOUNG_THRESHOLD, default_threshold) > 700, seen
    # After the crawl they are collectable again and the thresholds are the interpreter's:
    # a process running another crawl leaks nothing.
    assert seen["frozen_after"] == 0, seen
    assert seen["threshold_after"] == default_threshold, seen


def test_a_command_process_exits_with_its_heap_frozen():
    """The interpreter's shutdown collection skips the heap once a project command ran."""
    # An exit handler registered before the commands package is imported runs after
    # every handler it registers: it sees what the interpreter's shutdown will walk.
    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count()))\n"
        "import traverse_crawl.commands\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    frozen = int(done.stdout.rsplit(" ", 1)[1])
    assert frozen > 50_000, done.stdout
