"""``scrapy warc export`` / ``scrapy warc import``, WACZ, wget archives."""

from __future__ import annotations

import gzip
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support.cli import scrapy
from tests.support.server import Reply, Server
from tests.support.warctools import PYWB_BIN, pywb, replayed, run, warcio_check, warcio_index

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
GZ_HTML = ("<p>" + "zipped " * 400 + '<a href="a.html">a</a></p>').encode()


def site(server: Server) -> None:
    server.site(
        {
            "/home.html": """<a href="a.html">a</a> <a href="old.html">old</a>
                <a href="img.png">png</a> <a href="gz.html">gz</a>""",
            "/a.html": "<p>caf\u00e9</p>",
            "/old.html": Reply(301, b"", headers={"Location": "/new.html"}),
            "/new.html": '<a href="home.html">home</a>',
            "/img.png": Reply(body=PNG, content_type="image/png"),
            "/gz.html": Reply(body=gzip.compress(GZ_HTML), headers={"Content-Encoding": "gzip"}),
        }
    )


def pages_of(manifest: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(p["id"], p["url"], p["depth"], p.get("sourceRef")) for p in manifest["pages"]]


def warc_cli(tmp_path: Path, store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = scrapy("warc", *args, "-s", f"TRAVERSE_STORE={store}", timeout=120)
    assert done.returncode == 0, done.stderr
    return done


async def replay(crawl: Any, store: Path, url: str, source_id: str) -> dict[str, Any]:
    settings = {"TRAVERSE_MODE": "replay", "TRAVERSE_STORE": str(store)}
    return (await crawl(settings=settings, url=url, source_id=source_id)).manifest


@pytest.mark.pywb
@pytest_twisted.ensureDeferred
async def test_export_import_replay_gives_the_capture_manifest(server, crawl, tmp_path):
    site(server)
    seed = server.url("/home.html")
    captured = (await crawl(url=seed, source_id="s")).manifest
    assert all("snapshot" in p["fetch"] for p in captured["pages"])
    out = tmp_path / "export.warc.gz"
    done = warc_cli(tmp_path, tmp_path / "store", "export", "-o", str(out))
    assert "exported 5 snapshot(s)" in done.stdout
    warcio_check(out)

    empty = tmp_path / "imported"
    done = warc_cli(tmp_path, empty, "import", str(out), "--source-id", "s")
    assert "imported 5 snapshot(s)" in done.stdout and "skipped 0" in done.stdout
    server.shutdown()
    assert pages_of(await replay(crawl, empty, seed, "s")) == pages_of(captured)

    # The export replays in pywb: resource records with truthful headers.
    with pywb(tmp_path / "pywb", "export", out) as prefix:
        assert replayed(prefix, server.url("/img.png")) == (200, PNG)
        assert replayed(prefix, server.url("/gz.html")) == (200, GZ_HTML)


@pytest.mark.pywb
@pytest_twisted.ensureDeferred
async def test_wacz_opens_in_pywb_and_imports_back(server, crawl, tmp_path):
    site(server)
    seed = server.url("/home.html")
    captured = (await crawl(url=seed, source_id="w")).manifest
    out = tmp_path / "crawl.wacz"
    warc_cli(tmp_path, tmp_path / "store", "export", "w", "-o", str(out))
    with zipfile.ZipFile(out) as archive:
        names = set(archive.namelist())
        pages = [json.loads(line) for line in archive.read("pages/pages.jsonl").splitlines()]
    assert {
        "archive/data.warc.gz",
        "indexes/index.cdx",
        "pages/pages.jsonl",
        "datapackage.json",
    } <= names
    assert {p["url"] for p in pages[1:]} == {
        p["fetch"]["snapshot"]["url"] for p in captured["pages"]
    }
    run(PYWB_BIN / "wacz", "validate", "-f", out)
    with pywb(tmp_path / "pywb", "wacz", out, unpack_wacz=True) as prefix:
        assert replayed(prefix, server.url("/img.png")) == (200, PNG)
        assert replayed(prefix, server.url("/a.html")) == (200, "<p>caf\u00e9</p>".encode())
    empty = tmp_path / "imported"
    done = warc_cli(tmp_path, empty, "import", str(out), "--source-id", "w")
    assert "imported 5 snapshot(s)" in done.stdout
    server.shutdown()
    assert pages_of(await replay(crawl, empty, seed, "w")) == pages_of(captured)


@pytest_twisted.ensureDeferred
async def test_wget_warc_imports_and_replays(server, crawl, tmp_path):
    site(server)
    work = tmp_path / "wget"
    work.mkdir()
    for path in ("/home.html", "/a.html", "/img.png", "/gz.html"):
        done = subprocess.run(
            ["wget", "-q", "--warc-file", path.strip("/").replace(".", "-"), server.url(path)],
            cwd=work,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    archives = sorted(str(p) for p in work.glob("*.warc.gz"))
    assert len(archives) == 4
    store = tmp_path / "imported"
    done = warc_cli(tmp_path, store, "import", *archives, "--source-id", "wget")
    assert "imported 4 snapshot(s)" in done.stdout and "skipped 0" in done.stdout
    server.shutdown()
    manifest = await replay(crawl, store, server.url("/home.html"), "wget")
    by_url = {p["url"]: p["fetch"] for p in manifest["pages"]}
    for path in ("/home.html", "/a.html", "/img.png", "/gz.html"):
        assert by_url[server.url(path)]["snapshot"]["fromCache"] is True
    assert by_url[server.url("/old.html")]["error"]["kind"] == "no-snapshot"


def test_truncated_and_non_warc_files_import_what_they_can(server, tmp_path):
    site(server)
    work = tmp_path / "wget"
    work.mkdir()
    run("wget", "-q", "--warc-file", "two", server.url("/a.html"), server.url("/img.png"), cwd=work)
    whole = (work / "two.warc.gz").read_bytes()
    (png,) = [
        r
        for r in warcio_index(work / "two.warc.gz")
        if r["warc-type"] == "response" and r["warc-target-uri"].endswith("/img.png")
    ]
    cut = int(png["offset"]) + 200  # inside the PNG's response record
    truncated = tmp_path / "truncated.warc.gz"
    truncated.write_bytes(whole[:cut])
    not_warc = tmp_path / "notes.warc"
    not_warc.write_text("this is not a web archive\n" * 20)
    store = tmp_path / "imported"
    done = warc_cli(tmp_path, store, "import", str(truncated), str(not_warc), "--source-id", "t")
    assert "imported 1 snapshot(s)" in done.stdout
    assert "skipped 2 malformed record(s)" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2
    assert f"{truncated}: skipped record at offset {png['offset']}:" in warnings[0]
    assert f"{not_warc}: skipped record at offset 0: not a WARC record" in warnings[1]
    assert len(list(store.rglob("*.json"))) == 1
