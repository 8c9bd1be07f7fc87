"""Extraction in a process of its own: the same items, extracted beside the crawl.

With ``TRAVERSE_EXTRACT_PROCESS`` (the default) each page is extracted in a child
process; without it, in a thread of the crawl. A user must not be able to tell the
two apart but by speed: the same items file byte for byte, the same items yielded,
the same page warnings in the manifest. A process killed in the middle costs no
item, and no extraction process outlives its crawl.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

import pytest_twisted

from tests.component.extraction.test_product_site import extract_settings
from tests.support import product_site
from tests.support.child_watch import ChildWatch

WATCH = "tests.component.extraction.test_extraction_process.ProcessWatch"


class ProcessWatch(ChildWatch):
    """Notes the extraction process's pid at each response; kills it at ``kill_at``."""

    pids: ClassVar[list[int]] = []

    def child(self) -> int | None:
        spider: Any = self.crawler.spider
        process = spider.extraction.process
        return None if process is None else process.child.pid


def replay_settings(tmp_path: Path, name: str, in_process: bool) -> dict[str, Any]:
    # Two items per page at most: the listing's third card is a page warning, which
    # must come back from the process into the manifest like any other.
    return extract_settings(
        tmp_path,
        TRAVERSE_MODE="replay",
        TRAVERSE_EXTRACT_PROCESS=in_process,
        TRAVERSE_MAX_ITEMS_PER_PAGE=2,
        TRAVERSE_ITEMS_DIR=str(tmp_path / f"items-{name}"),
        TRAVERSE_MANIFEST_DIR=str(tmp_path / f"manifests-{name}"),
        EXTENSIONS={WATCH: 900},
    )


def items_bytes(tmp_path: Path, name: str) -> bytes:
    (path,) = (tmp_path / f"items-{name}").glob("*.jsonl")
    return path.read_bytes()


def extracted(items: list[dict[str, Any]]) -> list[str]:
    """The extracted items yielded, in no particular order (pages finish in any)."""
    return sorted(json.dumps(item) for item in items if "evidence" in item)


async def capture(server: Any, crawl: Any, tmp_path: Path) -> None:
    server.site(product_site.PAGES)
    await crawl(settings=extract_settings(tmp_path), url=server.url("/"), source_id="site")
    server.shutdown()
    server.server_close()


@pytest_twisted.ensureDeferred
async def test_extraction_in_its_process_is_extraction_in_the_crawl(
    server, crawl, tmp_path, caplog
):
    await capture(server, crawl, tmp_path)
    ProcessWatch.pids, ProcessWatch.kill_at = [], None
    caplog.set_level(logging.INFO, logger="traverse_crawl")
    results = {}
    for name, in_process in (("process", True), ("thread", False)):
        caplog.clear()
        settings = replay_settings(tmp_path, name, in_process)
        results[name] = await crawl(settings=settings, url=server.url("/"), source_id="site")
        done = [r.getMessage() for r in caplog.records if "extraction process:" in r.getMessage()]
        if in_process:
            html_pages = results[name].stats["extraction/pages"]
            assert done and done[0].startswith(f"extraction process: {html_pages} page(s)")
        else:
            assert not done
    assert len(ProcessWatch.pids) == 1  # the thread's crawl started none
    with_process, with_thread = results["process"], results["thread"]
    assert items_bytes(tmp_path, "process") == items_bytes(tmp_path, "thread")
    assert items_bytes(tmp_path, "process").count(b"\n") == 4  # the listing's first two cards
    assert extracted(with_process.items) == extracted(with_thread.items)
    assert with_process.manifest == with_thread.manifest
    listing = next(p for p in with_process.manifest["pages"] if p["url"].endswith("/list.html"))
    assert any("TRAVERSE_MAX_ITEMS_PER_PAGE" in w for w in listing["fetch"]["warnings"])
    # No extraction process outlives its crawl: it was reaped at the engine's stop.
    try:
        os.kill(ProcessWatch.pids[0], 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError(f"extraction process {ProcessWatch.pids[0]} is still running")


@pytest_twisted.ensureDeferred
async def test_a_killed_extraction_process_costs_no_item(server, crawl, tmp_path, caplog):
    await capture(server, crawl, tmp_path)
    ProcessWatch.pids, ProcessWatch.kill_at = [], None
    await crawl(settings=replay_settings(tmp_path, "thread", False), url=server.url("/"),
                source_id="site")  # fmt: skip
    ProcessWatch.kill_at = 2
    caplog.set_level(logging.INFO, logger="traverse_crawl")
    killed = await crawl(settings=replay_settings(tmp_path, "killed", True), url=server.url("/"),
                         source_id="site")  # fmt: skip
    assert items_bytes(tmp_path, "killed") == items_bytes(tmp_path, "thread")
    assert killed.stats["extraction/process_lost"] == 1
    lost = [r for r in caplog.records if "extraction process ended before" in r.getMessage()]
    assert len(lost) == 1 and lost[0].levelno == logging.WARNING
    assert "(killed by SIGKILL)" in lost[0].getMessage()
