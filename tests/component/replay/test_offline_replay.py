"""Capture, then replay with no network: the same pages, depths and ``sourceRef``s."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from scrapy import signals
from scrapy.crawler import AsyncCrawlerRunner
from scrapy.utils.project import get_project_settings
from twisted.internet.defer import Deferred

from tests.conftest import base_settings
from tests.support.server import Reply, Server
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, source_dir_name
from traverse_crawl.spider import TraverseSpider

# A PNG signature and a PDF header followed by every byte value: any text
# decoding or newline translation on the way would change them.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + bytes(range(255, -1, -1)) * 4


def site(server: Server) -> None:
    """Depth 0..3, a redirect, a PNG, a PDF and a text page."""
    server.site(
        {
            "/home.html": """<a href="a.html">a</a> <a href="old.html">old</a>
                <a href="img.png">png</a> <a href="doc.pdf">pdf</a>""",
            "/a.html": '<a href="b.html">b</a> <a href="notes.txt">notes</a>',
            "/b.html": '<a href="c.html">c</a>',
            "/c.html": "<p>deepest</p>",
            "/new.html": '<a href="home.html">home</a> <p>caf\u00e9</p>',
            "/old.html": Reply(301, b"", headers={"Location": "/new.html"}),
            "/img.png": Reply(body=PNG, content_type="image/png"),
            "/doc.pdf": Reply(body=PDF, content_type="application/pdf"),
            "/notes.txt": Reply(
                body="<a href='x.html'>not followed</a>", content_type="text/plain"
            ),
        }
    )


def pages_of(manifest: dict[str, Any]) -> list[tuple[str, str, int, str | None]]:
    return [(p["id"], p["url"], p["depth"], p.get("sourceRef")) for p in manifest["pages"]]


def stored_files(store: Path) -> list[Path]:
    return sorted(store.rglob("*.json"))


@pytest_twisted.ensureDeferred
async def test_replay_with_server_down_reproduces_the_capture(server, crawl, tmp_path):
    site(server)
    seed = server.url("/home.html")
    capture = await crawl(settings={"TRAVERSE_MAX_DEPTH": 3}, url=seed, source_id="s")
    captured = capture.manifest
    assert captured["mode"] == "capture"
    assert all("snapshot" in p["fetch"] for p in captured["pages"])
    assert len(captured["pages"]) == 8
    assert capture.stats["snapshot/stored"] == 8
    assert len(stored_files(tmp_path / "store")) == 8

    hits_before = len(server.paths())
    server.shutdown()
    server.server_close()

    replay = await crawl(
        settings={"TRAVERSE_MAX_DEPTH": 3, "TRAVERSE_MODE": "replay"}, url=seed, source_id="s"
    )
    replayed = replay.manifest
    assert replayed["mode"] == "replay"
    assert pages_of(replayed) == pages_of(captured)
    assert replayed["warnings"] == captured["warnings"] == []
    assert replayed["truncated"] is captured["truncated"] is False
    for before, after in zip(captured["pages"], replayed["pages"], strict=True):
        assert after["fetch"]["snapshot"] == {**before["fetch"]["snapshot"], "fromCache": True}
    assert replay.stats["replay/served"] == 8
    assert "replay/miss" not in replay.stats
    assert "snapshot/stored" not in replay.stats  # replay writes nothing
    assert len(stored_files(tmp_path / "store")) == 8
    assert len(server.paths()) == hits_before
    # The redirect's snapshot keeps its final URL; the page keeps its frontier URL.
    old = next(p for p in replayed["pages"] if p["url"].endswith("/old.html"))
    assert old["fetch"]["snapshot"]["url"] == server.url("/new.html")
    assert old["fetch"]["snapshot"]["redirects"] == [server.url("/old.html")]


@pytest_twisted.ensureDeferred
async def test_replay_sends_nothing_to_a_running_server(server, crawl):
    site(server)
    await crawl(url=server.url("/home.html"))
    hits = server.paths()
    assert "/robots.txt" in hits
    replay = await crawl(settings={"TRAVERSE_MODE": "replay"}, url=server.url("/home.html"))
    assert server.paths() == hits  # not a page, not robots.txt
    assert all("snapshot" in p["fetch"] for p in replay.manifest["pages"])


@pytest_twisted.ensureDeferred
async def test_replay_resolves_and_connects_to_nothing(crawl, tmp_path):
    # A store written by hand for hosts that do not exist, with the egress guard
    # and robots on: any DNS look-up, robots.txt fetch or connection would fail.
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    seed = "http://replay.invalid/"
    bodies = {
        seed: '<a href="/two">two</a> <a href="/three">three</a>',
        "http://replay.invalid/two": '<a href="/">home</a>',
    }
    for url, body in bodies.items():
        store.put(
            build_snapshot(
                source_id=page_id("offline", url),
                url=url,
                status=200,
                content_type="html",
                raw_body=body.encode(),
                content_type_header="text/html",
                fetched_at="2026-07-02T00:00:00.000Z",
            )
        )
    result = await crawl(
        settings={"TRAVERSE_MODE": "replay", "TRAVERSE_EGRESS_GUARD": True, "ROBOTSTXT_OBEY": True},
        url=seed,
        source_id="offline",
    )
    pages = result.manifest["pages"]
    assert [(p["url"], p["depth"]) for p in pages] == [
        (seed, 0),
        ("http://replay.invalid/two", 1),
        ("http://replay.invalid/three", 1),
    ]
    assert pages[0]["fetch"]["snapshot"]["fromCache"] is True
    assert pages[2]["fetch"] == {
        "error": {
            "kind": "no-snapshot",
            "message": 'no snapshot stored for sourceId "offline::http://replay.invalid/three"',
        }
    }
    assert "sourceRef" not in pages[2]
    assert result.stats["replay/served"] == 2 and result.stats["replay/miss"] == 1
    assert not any(key.startswith("downloader/request") for key in result.stats)


@pytest_twisted.ensureDeferred
async def test_replay_deeper_than_capture_is_no_snapshot_on_those_pages(server, crawl):
    site(server)
    seed = server.url("/home.html")
    capture = await crawl(settings={"TRAVERSE_MAX_DEPTH": 1}, url=seed, source_id="s")
    captured = {p["url"]: p for p in capture.manifest["pages"]}  # before replay rewrites it
    replay = await crawl(
        settings={"TRAVERSE_MAX_DEPTH": 3, "TRAVERSE_MODE": "replay"}, url=seed, source_id="s"
    )
    missing = []
    for page in replay.manifest["pages"]:
        if page["url"] in captured:
            assert page["sourceRef"] == captured[page["url"]]["sourceRef"]
            assert page["fetch"]["snapshot"]["fromCache"] is True
        else:
            missing.append(page["url"])
            assert page["fetch"] == {
                "error": {
                    "kind": "no-snapshot",
                    "message": f'no snapshot stored for sourceId "{page["id"]}"',
                }
            }
    # depth 2 pages are reached (a.html was captured with its body) but never
    # captured; their own links are unknown, so depth 3 is never reached.
    assert missing == [server.url("/b.html"), server.url("/notes.txt")]
    assert replay.stats["replay/miss"] == 2


@pytest_twisted.ensureDeferred
async def test_replay_without_a_store_is_one_invalid_config_page(server, crawl, tmp_path, caplog):
    site(server)
    missing = tmp_path / "no-such-store"
    seed = server.url("/home.html") + "#top"
    with caplog.at_level(logging.INFO):
        result = await crawl(
            settings={"TRAVERSE_MODE": "replay", "TRAVERSE_STORE": str(missing)},
            url=seed,
            source_id="s",
        )
    manifest = result.manifest
    assert manifest["seed"] == {"id": "s", "url": seed}
    assert len(manifest["pages"]) == 1
    page = manifest["pages"][0]
    assert page["depth"] == 0
    assert page["fetch"] == {
        "error": {"kind": "invalid-config", "message": "mode 'replay' requires a store"}
    }
    assert manifest["warnings"] == [] and manifest["truncated"] is False
    assert server.paths() == []
    assert not missing.exists()
    assert "replay reader process" not in caplog.text  # none started for no store


async def _replay_snapshots(tmp_path: Path, allow: list[str], url: str) -> list[dict[str, Any]]:
    """A replay crawl that keeps each item's full snapshot (bodies included)."""
    settings = get_project_settings()
    settings.setdict(base_settings(tmp_path, allow), priority="project")
    settings.set("TRAVERSE_MODE", "replay", priority="cmdline")
    runner = AsyncCrawlerRunner(settings)
    crawler = runner.create_crawler(TraverseSpider)
    snapshots: list[dict[str, Any]] = []

    def collect(item: Any, response: Any, **_: Any) -> None:
        snapshots.append(response.meta["traverse_snapshot"])

    crawler.signals.connect(collect, signal=signals.item_scraped)
    await Deferred.fromFuture(runner.crawl(crawler, url=url))
    return snapshots


@pytest_twisted.ensureDeferred
async def test_png_and_pdf_round_trip_byte_for_byte(server, crawl, tmp_path):
    site(server)
    capture = await crawl(settings={"TRAVERSE_MAX_DEPTH": 1}, url=server.url("/home.html"))
    binaries = {p["url"].rsplit("/", 1)[1]: p for p in capture.manifest["pages"]}
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    for name, raw, kind in (("img.png", PNG, "png"), ("doc.pdf", PDF, "pdf")):
        page = binaries[name]
        assert page["fetch"]["snapshot"]["contentType"] == kind
        assert page["fetch"]["snapshot"]["bodyHash"] == hashlib.sha256(raw).hexdigest()
        ref = parse_source_ref(page["sourceRef"])
        assert ref is not None
        stored = store.find(ref.source_id, ref.body_hash, ref.fetched_at)
        assert stored is not None and stored["bodyBytes"] == raw and stored["body"] == ""
        (path,) = Path(store.directory(page["id"])).glob("*.json")
        on_disk = json.loads(path.read_text(encoding="utf-8"))
        assert list(on_disk)[-1] == "bodyBytesBase64" and "bodyBytes" not in on_disk

    server.shutdown()
    server.server_close()
    replayed = await _replay_snapshots(tmp_path, [server.origin], server.url("/home.html"))
    by_url = {s["url"].rsplit("/", 1)[1]: s for s in replayed if s is not None}
    assert by_url["img.png"]["bodyBytes"] == PNG
    assert by_url["doc.pdf"]["bodyBytes"] == PDF
    assert by_url["img.png"]["fromCache"] is True
    assert "caf\u00e9" in by_url["new.html"]["body"]


@pytest_twisted.ensureDeferred
async def test_store_failure_is_a_page_warning_and_the_crawl_goes_on(server, crawl, tmp_path):
    site(server)
    seed = server.url("/home.html")
    store = tmp_path / "store"
    store.mkdir()
    # A file where the seed page's directory should be: every write there fails.
    (store / source_dir_name(page_id("s", seed))).write_text("in the way")
    result = await crawl(settings={"TRAVERSE_MAX_DEPTH": 1}, url=seed, source_id="s")
    manifest = result.manifest
    home = manifest["pages"][0]
    assert "snapshot" in home["fetch"] and "sourceRef" in home  # the page keeps its outcome
    (warning,) = manifest["warnings"]
    assert warning.startswith(f"[depth 0] {seed}: store.put failed (")
    assert warning.endswith("); page fetch result kept, snapshot not persisted")
    assert len(manifest["pages"]) == 5  # the crawl went on: links were followed
    assert result.stats["snapshot/store_failed"] == 1
    assert result.stats["snapshot/stored"] == 4
    assert len(stored_files(store)) == 4


@pytest_twisted.ensureDeferred
async def test_live_mode_stores_nothing(server, crawl, tmp_path):
    site(server)
    result = await crawl(settings={"TRAVERSE_MODE": "live"}, url=server.url("/home.html"))
    assert result.manifest["mode"] == "live"
    assert all("snapshot" in p["fetch"] for p in result.manifest["pages"])
    assert stored_files(tmp_path / "store") == []
    assert "snapshot/stored" not in result.stats


@pytest_twisted.ensureDeferred
async def test_store_root_that_cannot_be_created_stops_before_any_request(server, crawl, tmp_path):
    site(server)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="TRAVERSE_STORE"):
        await crawl(
            settings={"TRAVERSE_STORE": str(blocker / "store")}, url=server.url("/home.html")
        )
    assert server.paths() == []
    assert os.path.isfile(blocker)
