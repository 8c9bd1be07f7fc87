"""WARC written while capturing, checked by warcio and replayed by pywb; a WARC disk that
fails never stops the capture."""

from __future__ import annotations

import gzip
import os
import time
from collections import Counter
from typing import Any

import pytest
import pytest_twisted
from warcio.archiveiterator import ArchiveIterator

from tests.support.server import Handler, Reply, Server
from tests.support.warctools import (
    WARCIO,
    pywb,
    pywb_cdx,
    replayed,
    run,
    warc_files,
    warcio_check,
    warcio_index,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
GZ_HTML = ("<p>" + "a gzip-encoded page " * 300 + "</p>").encode()
ETAG_HTML = b"<p>validated</p>"


def etag_page(handler: Handler) -> Reply:
    if handler.headers.get("If-None-Match") == '"v1"':
        return Reply(304, b"", headers={"ETag": '"v1"'}, content_type=None)
    return Reply(body=ETAG_HTML, headers={"ETag": '"v1"'})


def site(server: Server) -> None:
    server.site(
        {
            "/home.html": """<a href="old.html">old</a> <a href="gz.html">gz</a>
                <a href="img.png">png</a> <a href="missing.html">404</a>
                <a href="etag.html">etag</a>""",
            "/old.html": Reply(301, b"", headers={"Location": "/new.html"}),
            "/new.html": "<p>new</p>",
            "/gz.html": Reply(body=gzip.compress(GZ_HTML), headers={"Content-Encoding": "gzip"}),
            "/img.png": Reply(body=PNG, content_type="image/png"),
        }
    )
    server.routes["/etag.html"] = etag_page


def kinds(records: list[dict[str, str]]) -> list[tuple[str, str, str]]:
    return [
        (r["warc-type"], r.get("warc-target-uri", ""), r.get("http:status", "")) for r in records
    ]


def assert_exchanges_paired(records: list[dict[str, str]]) -> None:
    """Each request is followed by its response (or revisit), which it names."""
    for i, record in enumerate(records):
        if record["warc-type"] == "request":
            answer = records[i + 1]
            assert answer["warc-type"] in ("response", "revisit")
            assert answer["warc-target-uri"] == record["warc-target-uri"]


@pytest.mark.pywb
@pytest_twisted.ensureDeferred
async def test_capture_writes_valid_warc_that_pywb_replays(server, crawl, tmp_path):
    site(server)
    warc_dir = tmp_path / "warc"
    settings: dict[str, Any] = {"TRAVERSE_WARC_DIR": str(warc_dir), "TRAVERSE_REVALIDATE": True}
    first = await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    assert first.stats["warc/files"] == 1
    (one,) = warc_files(warc_dir)
    assert not list(warc_dir.glob("*.open"))
    warcio_check(one)
    records = warcio_index(one)
    url = server.url
    assert kinds(records[:5]) == [
        ("warcinfo", "", ""),
        ("request", url("/robots.txt"), ""),
        ("response", url("/robots.txt"), "404"),
        ("request", url("/home.html"), ""),
        ("response", url("/home.html"), "200"),
    ]
    assert_exchanges_paired(records)
    assert Counter(kinds(records[5:])) == Counter(
        [
            ("metadata", url("/home.html"), ""),
            ("request", url("/old.html"), ""),
            ("response", url("/old.html"), "301"),
            ("request", url("/new.html"), ""),
            ("response", url("/new.html"), "200"),
            ("metadata", url("/new.html"), ""),
            *[
                (kind, url(path), status)
                for path, status in (
                    ("/gz.html", "200"),
                    ("/img.png", "200"),
                    ("/missing.html", "404"),
                    ("/etag.html", "200"),
                )
                for kind, status in (("request", ""), ("response", status), ("metadata", ""))
            ],
        ]
    )
    # A page's metadata record comes after its last response (the redirect's target).
    order = kinds(records)
    assert order.index(("response", url("/new.html"), "200")) > order.index(
        ("response", url("/old.html"), "301")
    )
    for path in ("/home.html", "/new.html", "/gz.html", "/img.png", "/missing.html", "/etag.html"):
        final = [i for i, k in enumerate(order) if k[1] == url(path) and k[0] == "response"][-1]
        assert order.index(("metadata", url(path), "")) > final

    # pywb's index has second resolution: a revisit in the same second as its
    # original may sort before it. Real revalidations come later than that.
    time.sleep(1.1)
    second = await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    assert second.stats["warc/revisits"] == 1
    files = warc_files(warc_dir)
    assert len(files) == 2
    for path in files:
        warcio_check(path)
    later = warcio_index(files[1])
    (revisit,) = [r for r in later if r["warc-type"] == "revisit"]
    assert revisit["warc-target-uri"] == url("/etag.html")
    assert revisit["http:status"] == "304"
    assert revisit["warc-profile"].endswith("/revisit/server-not-modified")

    server.shutdown()
    with pywb(tmp_path / "pywb", "capture", *files) as prefix:
        assert replayed(prefix, url("/img.png")) == (200, PNG)
        assert replayed(prefix, url("/gz.html")) == (200, GZ_HTML)
        assert replayed(prefix, url("/new.html")) == (200, b"<p>new</p>")
        # pywb resolves the revisit to the original by its SHA-1 payload digest
        # (and replays it with the 304's own status; the page is the original).
        original, revisit_line = pywb_cdx(prefix, url("/etag.html"))
        assert revisit_line["filename"] == files[1].name
        assert revisit_line["orig.filename"] == original["filename"] == files[0].name
        assert revisit_line["orig.offset"] == original["offset"]
        assert replayed(prefix, url("/etag.html"), original["timestamp"]) == (200, ETAG_HTML)


@pytest_twisted.ensureDeferred
async def test_files_roll_at_the_size_limit(server, crawl, tmp_path):
    site(server)
    warc_dir = tmp_path / "warc"
    result = await crawl(
        settings={"TRAVERSE_WARC_DIR": str(warc_dir), "TRAVERSE_WARC_MAX_SIZE": 3000},
        url=server.url("/home.html"),
        source_id="s",
    )
    files = warc_files(warc_dir)
    assert len(files) > 2
    assert result.stats["warc/files"] == len(files)
    assert not list(warc_dir.glob("*.open"))
    total = 0
    for path in files:
        warcio_check(path)
        records = warcio_index(path)
        assert records[0]["warc-type"] == "warcinfo"
        total += len(records) - 1
        # A file is closed once it passes the limit: only its last write crosses it.
        assert path.stat().st_size < 3000 + 2 * len(PNG)
    assert total == result.stats["warc/records"]
    assert_exchanges_paired(
        [r for path in files for r in warcio_index(path) if r["warc-type"] != "warcinfo"]
    )


APP = (
    b"<html><body><p id='x'>served</p><a href='paper.pdf'>paper</a>"
    b"<script>document.getElementById('x').textContent = 'rendered';</script></body></html>"
)
GZ_APP = gzip.compress(APP)
PDF = b"%PDF-1.4\n" + bytes(range(256))


@pytest.mark.browser
@pytest_twisted.ensureDeferred
async def test_rendered_page_is_written_as_the_navigation_response(server, crawl, tmp_path):
    server.site(
        {
            "/app.html": Reply(body=GZ_APP, headers={"Content-Encoding": "gzip"}),
            "/paper.pdf": Reply(body=PDF, content_type="application/pdf"),
        }
    )
    warc_dir = tmp_path / "warc"
    result = await crawl(
        settings={"TRAVERSE_WARC_DIR": str(warc_dir), "TRAVERSE_RENDER": "always"},
        url=server.url("/app.html"),
    )
    assert result.stats["render/rendered"] == 1
    (path,) = warc_files(warc_dir)
    warcio_check(path)
    with path.open("rb") as handle:
        responses = {
            record.rec_headers.get_header("WARC-Target-URI"): (
                record.http_headers,
                record.raw_stream.read(),
            )
            for record in ArchiveIterator(handle)
            if record.rec_type == "response"
        }
    # The document as received for the browser, still gzip-encoded and saying so,
    # not the serialised DOM.
    headers, payload = responses[server.url("/app.html")]
    assert headers.get_statuscode() == "200"
    assert headers.get_header("Content-Encoding") == "gzip"
    assert payload == GZ_APP and gzip.decompress(payload) == APP
    assert any("rendered</p>" in p.read_text() for p in (tmp_path / "store").rglob("*.json"))
    # A navigation handed back unrendered (a PDF) is written too, once.
    headers, payload = responses[server.url("/paper.pdf")]
    assert (headers.get_statuscode(), payload) == ("200", PDF)
    assert result.stats["warc/responses"] == 3  # robots.txt, the page, the PDF


@pytest_twisted.ensureDeferred
async def test_a_failing_warc_disk_never_stops_the_capture(server, crawl, tmp_path, caplog, capfd):
    server.site({"/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(3))})
    server.site({f"/p{i}.html": f"<h1>{i}</h1>" for i in range(3)})
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the WARC directory should be")
    result = await crawl(
        settings={"TRAVERSE_WARC_DIR": str(blocker / "warc")},
        url=server.url("/home.html"),
        source_id="s",
    )
    (manifest,) = result.manifests()
    assert len(manifest["pages"]) == 4
    assert all("snapshot" in page["fetch"] for page in manifest["pages"])
    assert result.stats["warc/responses"] == 5  # robots.txt and the four pages
    assert result.stats["warc/write_failed"] >= 5
    assert "warc/records" not in result.stats
    # Reported when it happens and at the end, through the crawl's logging (the writer
    # process prints nothing on stderr, which may be a JSON log).
    reported = [
        r
        for r in caplog.records
        if "WARC write to" in r.getMessage() and "failed" in r.getMessage()
    ]
    assert len(reported) == 2 and {r.name for r in reported} == {"traverse_crawl.warc.extension"}
    assert "WARC write to" not in capfd.readouterr().err
    assert not (tmp_path / "not-a-directory" / "warc").exists()
    assert os.path.isfile(blocker)


GZ_ETAG_HTML = ("<p>" + "validated, and sent gzip-encoded " * 100 + "</p>").encode()


def etag_gz_page(handler: Handler) -> Reply:
    if handler.headers.get("If-None-Match") == '"g1"':
        return Reply(304, b"", headers={"ETag": '"g1"'}, content_type=None)
    headers = {"ETag": '"g1"', "Content-Encoding": "gzip"}
    return Reply(body=gzip.compress(GZ_ETAG_HTML, mtime=0), headers=headers)


@pytest.mark.pywb
@pytest.mark.parametrize("old_folder", [False, True], ids=["new", "old-folder-migrated"])
@pytest_twisted.ensureDeferred
async def test_a_revalidating_recapture_leaves_a_folder_of_warc_files_only(
    server, crawl, tmp_path, old_folder, caplog
):
    caplog.set_level("INFO", logger="traverse_crawl.warc.extension")
    # A gzip-encoded page: its payload's SHA-1 is not the stored body's, so pywb
    # finds the revisit's original only by the digest the writer kept.
    server.site({"/home.html": '<a href="etag.html">gz</a>'})
    server.routes["/etag.html"] = etag_gz_page
    url = server.url("/etag.html")
    warc_dir, kept = tmp_path / "warc", tmp_path / "store" / "traverse-payload-digests.jsonl"
    settings: dict[str, Any] = {"TRAVERSE_WARC_DIR": str(warc_dir), "TRAVERSE_REVALIDATE": True}
    await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    assert [p.suffixes[-2:] for p in warc_dir.iterdir()] == [[".warc", ".gz"]]
    assert url in kept.read_text()
    if old_folder:  # as earlier versions left it: the digests among the WARC files
        kept.rename(warc_dir / kept.name)

    time.sleep(1.1)  # pywb's index has second resolution (see above)
    second = await crawl(settings=settings, url=server.url("/home.html"), source_id="s")
    assert second.stats["warc/revisits"] == 1
    everything = sorted(warc_dir.iterdir())  # DIR/*
    assert len(everything) == 2
    assert all(p.name.endswith(".warc.gz") for p in everything)
    assert url in kept.read_text()
    moved = [r.getMessage() for r in caplog.records if r.getMessage().startswith("moved ")]
    assert moved == (
        [f"moved {warc_dir / kept.name} into TRAVERSE_STORE {kept.parent}"] if old_folder else []
    )
    run(WARCIO, "check", "-v", *everything)

    server.shutdown()
    with pywb(tmp_path / "pywb", "again", *everything) as prefix:
        added = tmp_path / "pywb" / "collections" / "again" / "archive"
        assert sorted(p.name for p in added.iterdir()) == [p.name for p in everything]
        original, revisit = pywb_cdx(prefix, url)
        assert revisit["orig.filename"] == original["filename"] == everything[0].name
        assert revisit["orig.offset"] == original["offset"]
        # At its own date pywb serves the revisit with the 304's status, which
        # carries no body over HTTP; the payload it resolved it to is the original's.
        assert replayed(prefix, url, revisit["timestamp"]) == (304, b"")
        assert replayed(prefix, url, original["timestamp"]) == (200, GZ_ETAG_HTML)
