"""The start-up heap extension called directly: crawls side by side in one process share the
frozen heap (``runtime/heap_extension.py``)."""

from __future__ import annotations

import gc

from traverse_crawl.runtime.heap_extension import YOUNG_THRESHOLD, FrozenStartupHeap


def test_crawls_side_by_side_share_the_frozen_heap():
    """Two crawls side by side in one process (a ``CrawlerProcess`` running two
    spiders opens and closes the extension as below): the heap stays frozen and
    tuned until the last one closes, then is as it was."""
    before = (gc.get_threshold(), gc.get_freeze_count())
    first, second = FrozenStartupHeap(), FrozenStartupHeap()
    first.opened()
    frozen = gc.get_freeze_count()
    assert frozen > 0 and gc.get_threshold()[0] == max(YOUNG_THRESHOLD, before[0][0])
    second.opened()
    first.closed()
    first.closed()  # a second close of the same crawl changes nothing
    assert gc.get_freeze_count() >= frozen
    assert gc.get_threshold()[0] == max(YOUNG_THRESHOLD, before[0][0])
    second.closed()
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
