"""Replay's reader process: the same replay, read ahead beside the crawl.

With ``TRAVERSE_REPLAY_READER`` (the default) each page's snapshot is read, and its
links, ``sourceRef`` and ``bodySize`` found, in a process of its own; without it,
in the crawl. A user must not be able to tell the two apart but by speed: the
same manifest byte for byte, the same items, stats and store warnings — on a
site with HTML, text, a PNG, a PDF, a redirect, a page deeper than the capture
(no snapshot), a torn snapshot file and a link bound. A reader killed in the
middle costs no page, and no reader process outlives its crawl.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, ClassVar

import pytest_twisted
from scrapy import signals
from scrapy.crawler import Crawler

from tests.component.replay.test_offline_replay import site
from tests.support.child_watch import ChildWatch
from tests.support.server import Server
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.replay import middleware as replay_module
from traverse_crawl.replay.middleware import ReplayMiddleware
from traverse_crawl.snapshots.store import FilesystemSnapshotStore


def replay_middleware(crawler: Crawler) -> ReplayMiddleware:
    engine: Any = crawler.engine
    found = [
        mw for mw in engine.downloader.middleware.middlewares if isinstance(mw, ReplayMiddleware)
    ]
    assert len(found) == 1
    return found[0]


class ReaderWatch(ChildWatch):
    """Notes the reader's pid at each response; with ``kill_at``, kills it at that response."""

    pids: ClassVar[list[int]] = []

    def child(self) -> int | None:
        reader = replay_middleware(self.crawler).reader
        return None if reader is None else reader.child.pid


def watched(reader: bool, **more: Any) -> dict[str, Any]:
    return {
        "TRAVERSE_MODE": "replay",
        "TRAVERSE_REPLAY_READER": reader,
        "EXTENSIONS": {"tests.component.replay.test_reader_process.ReaderWatch": 900},
        **more,
    }


def manifest_bytes(directory: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(directory.glob("*.json"))]


def chain_site(server: Server, pages: int) -> None:
    """A home page linking to ``pages`` pages, each linking to the next two."""
    links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(pages))
    files = {"/home.html": links}
    for i in range(pages):
        files[f"/p{i}.html"] = f'<a href="p{(i + 1) % pages}.html">n</a><p>{"x" * 2000}</p>'
    server.site(files)


@pytest_twisted.ensureDeferred
async def test_replay_with_the_reader_is_replay_without_it(server, crawl, tmp_path, caplog, capfd):
    site(server)
    url = server.url("/home.html")
    await crawl(settings={"TRAVERSE_MAX_PAGES": 50, "TRAVERSE_MAX_DEPTH": 2}, url=url)
    # A torn file: the page fails as no-snapshot, naming the file, in both replays.
    store = tmp_path / "store"
    notes = FilesystemSnapshotStore(str(store)).directory(page_id(url, server.url("/notes.txt")))
    torn = next(Path(notes).glob("*.json"))
    torn.write_bytes(torn.read_bytes()[:40])

    results = {}
    for reader in (True, False):
        ReaderWatch.pids.clear()
        caplog.clear()
        out = tmp_path / f"replay-{reader}"
        settings = watched(
            reader,
            TRAVERSE_MAX_PAGES=50,
            TRAVERSE_MAX_DEPTH=3,  # deeper than the capture: c.html has no snapshot
            TRAVERSE_MAX_LINKS_PER_PAGE=3,  # home has four links: a bound warning
            TRAVERSE_MANIFEST_DIR=str(out),
        )
        with caplog.at_level(logging.INFO):
            result = await crawl(settings=settings, url=url)
        stats = result.stats
        lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        notes = [r.getMessage() for r in caplog.records if "replay reader process" in r.message]
        results[reader] = (manifest_bytes(out), result.items, lines, stats, list(ReaderWatch.pids))
        assert stats["finish_reason"] == "finished"
        # The torn file is named once, in the crawl's log; not by the reader on stderr.
        assert "is damaged" not in capfd.readouterr().err
        if reader:
            assert len(ReaderWatch.pids) == 1
            assert notes and notes[0].startswith("replay reader process: ")
            assert int(notes[0].split()[3]) == stats["replay/served"] + stats["replay/miss"]
            assert not os.path.exists(f"/proc/{ReaderWatch.pids[0]}")  # reaped
        else:
            assert ReaderWatch.pids == [] and notes == []

    (with_bytes, with_items, with_lines, with_stats, _) = results[True]
    (without_bytes, without_items, without_lines, without_stats, _) = results[False]
    assert with_bytes == without_bytes
    # Items come as pages finish, in an order concurrency decides; the manifest is ordered.
    assert sorted(with_items, key=str) == sorted(without_items, key=str)
    assert with_lines == without_lines
    for key in ("replay/served", "replay/miss", "replay/damaged", "frontier/link_bound_hit"):
        assert with_stats.get(key) == without_stats.get(key), key
    manifest = json.loads(with_bytes[0])
    by_url = {p["url"].rsplit("/", 1)[-1]: p for p in manifest["pages"]}
    assert by_url["c.html"]["fetch"]["error"]["kind"] == "no-snapshot"
    assert "is damaged" in by_url["notes.txt"]["fetch"]["error"]["message"]
    assert any("TRAVERSE_MAX_LINKS_PER_PAGE" in w for w in manifest["warnings"])
    assert by_url["img.png"]["fetch"]["snapshot"]["contentType"] == "png"
    assert by_url["old.html"]["fetch"]["snapshot"]["url"] == server.url("/new.html")


@pytest_twisted.ensureDeferred
async def test_a_killed_reader_costs_no_page(server, crawl, tmp_path):
    chain_site(server, 120)
    url = server.url("/home.html")
    settings = {"TRAVERSE_MAX_PAGES": 200, "TRAVERSE_MAX_DEPTH": 3}
    await crawl(settings=settings, url=url)
    out = {}
    try:
        ReaderWatch.kill_at = 20
        for reader in (True, False):
            ReaderWatch.pids.clear()
            directory = tmp_path / f"replay-{reader}"
            more = {**settings, "TRAVERSE_MANIFEST_DIR": str(directory)}
            result = await crawl(settings=watched(reader, **more), url=url)
            assert result.stats["finish_reason"] == "finished"
            assert result.stats["replay/served"] == 121
            out[reader] = manifest_bytes(directory)
            if reader:  # killed at the 20th response, reaped at the end
                assert len(ReaderWatch.pids) == 1
                assert not os.path.exists(f"/proc/{ReaderWatch.pids[0]}")
    finally:
        ReaderWatch.kill_at = None
    assert out[True] == out[False]
    assert b'"error"' not in out[True][0]


class AheadWatch:
    """The most answers the replay middleware had asked for and not yet handed out."""

    most: ClassVar[int] = 0

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.response, signal=signals.response_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AheadWatch:
        return cls(crawler)

    def response(self, **_: Any) -> None:
        AheadWatch.most = max(AheadWatch.most, replay_middleware(self.crawler).ahead)


@pytest_twisted.ensureDeferred
async def test_large_pages_are_read_fewer_at_a_time(server, crawl, tmp_path, monkeypatch):
    # Answers of about 400 KB (the text and its bytes) against a budget of 250 KB: the
    # reader is asked two pages ahead once it has seen one (at most four before, when
    # it assumes 64 KB); with a large budget, up to READ_AHEAD.
    server.site(
        {
            "/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(30)),
            **{f"/p{i}.html": f"<p>{i}</p>" + "y" * 200_000 for i in range(30)},
        }
    )
    url = server.url("/home.html")
    await crawl(settings={"TRAVERSE_MAX_PAGES": 40}, url=url)
    replayed = {}
    for budget in (250_000, 64 * 1024 * 1024):
        monkeypatch.setattr(replay_module, "READ_AHEAD_BYTES", budget)
        AheadWatch.most = 0
        directory = tmp_path / f"replay-{budget}"
        settings = {
            "TRAVERSE_MODE": "replay",
            "TRAVERSE_MAX_PAGES": 40,
            "TRAVERSE_MANIFEST_DIR": str(directory),
            "EXTENSIONS": {"tests.component.replay.test_reader_process.AheadWatch": 900},
        }
        result = await crawl(settings=settings, url=url)
        assert result.stats["replay/served"] == 31
        replayed[budget] = (manifest_bytes(directory), AheadWatch.most)
    assert replayed[250_000][0] == replayed[64 * 1024 * 1024][0]
    assert 2 <= replayed[250_000][1] <= 4
    assert replayed[64 * 1024 * 1024][1] >= 10
