"""``scrapy warc import`` on archives other tools write: ARC, revisits, one-member gzip,
POST responses, URLs as written, cut files (docs/web-archives.md).

The archives are built here with warcio's writer (an ARC by hand: warcio reads ARC
but does not write it); the pywb test reads pywb's own sample archives where they
are installed (they are GPL-3.0, so never copied into the project).
"""

from __future__ import annotations

import gzip
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.warctools import PYWB_BIN
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

PAGE = b'<html><body><p>archived</p><a href="/next.html#top">next</a></body></html>'
OTHER = b"<html><body><p>other</p></body></html>"
SAMPLES = PYWB_BIN.parent / "sample_archive" / "warcs"
EMPTY_SHA1 = "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"  # a 304's payload: nothing
RAW_WARCIO = ("WARNING:", "Remainder:", "Offset:", "ERROR:", "Replacing spaces")


def warc(records: list[tuple[str, ...]], gzipped: bool = True) -> bytes:
    """A WARC of ``records``: (kind, url, date, body-or-digest[, extra]) tuples."""
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=gzipped)
    last_id = ""
    for kind, url, date, *rest in records:
        warc_headers = {"WARC-Date": date}
        if kind == "response":
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            record = writer.create_warc_record(
                url, "response", payload=io.BytesIO(rest[0].encode()), length=len(rest[0].encode()),
                http_headers=http, warc_headers_dict=warc_headers,
            )  # fmt: skip
        elif kind == "request":
            http = StatusAndHeaders(
                f"{rest[0]} /{url.split('/', 3)[3]} HTTP/1.1", [("Host", "example.com")],
                is_http_request=True,
            )  # fmt: skip
            warc_headers["WARC-Concurrent-To"] = last_id
            record = writer.create_warc_record(
                url, "request", payload=io.BytesIO(b""), length=0, http_headers=http,
                warc_headers_dict=warc_headers,
            )  # fmt: skip
        else:  # a revisit: (kind, url, date, profile, original url, original date, digest)
            profile, refers_url, refers_date, digest = rest
            status = "304 Not Modified" if profile == "server-not-modified" else "200 OK"
            http = StatusAndHeaders(status, [("Content-Type", "text/html")], protocol="HTTP/1.1")
            record = writer.create_revisit_record(
                url, digest, refers_url, refers_date, http_headers=http,
                warc_headers_dict=warc_headers,
            )  # fmt: skip
            if profile == "server-not-modified":
                record.rec_headers.replace_header(
                    "WARC-Profile", "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
                )
        writer.write_record(record)
        last_id = str(record.rec_headers.get_header("WARC-Record-ID"))
    return out.getvalue()


def payload_digest(data: bytes) -> str:
    (record,) = [
        r for r in ArchiveIterator(io.BytesIO(data)) if r.rec_type == "response"
    ]  # fmt: skip
    return str(record.rec_headers.get_header("WARC-Payload-Digest"))


def warc_import(
    tmp_path: Path, *files: Path, source_id: str = "t"
) -> subprocess.CompletedProcess[str]:
    store = tmp_path / "store"
    done = scrapy("warc", "import", *map(str, files), "--source-id", source_id,
                  "-s", f"TRAVERSE_STORE={store}", timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    for raw in RAW_WARCIO:
        assert raw not in done.stderr, done.stderr
    return done


def warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    lines = [line for line in done.stderr.splitlines() if not line.startswith("...")]
    assert all(line.startswith("warning: ") for line in lines), done.stderr
    return lines


def latest(tmp_path: Path, url: str, source_id: str = "t") -> dict[str, Any] | None:
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    return store.latest(f"{source_id}::{url}")  # type: ignore[return-value]


def arc_file(url: str, date: str, http_block: bytes) -> bytes:
    """An ARC v1 file: the filedesc record, then one record (the format is text headers)."""
    desc = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://test.arc 127.0.0.1 %s text/plain %d\n" % (date.encode(), len(desc))
    line = b"%s 127.0.0.1 %s text/html %d\n" % (url.encode(), date.encode(), len(http_block))
    return head + desc + b"\n" + line + http_block + b"\n"


HTTP_PAGE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % len(PAGE)
) + PAGE


def test_arc_and_arc_gz_import_the_payload_of_their_warc_twin(tmp_path):
    url = "http://example.com/"
    arc = tmp_path / "page.arc"
    arc.write_bytes(arc_file(url, "20140216050221", HTTP_PAGE))
    arc_gz = tmp_path / "page.arc.gz"  # one gzip member per record, as ARC.gz is written
    first, sep, rest = arc.read_bytes().partition(b"\n\n")
    arc_gz.write_bytes(gzip.compress(first + sep) + gzip.compress(rest))
    twin = tmp_path / "page.warc.gz"
    twin.write_bytes(warc([("response", url, "2014-02-16T05:02:21Z", PAGE.decode())]))
    bodies = []
    for name, archive in (("arc", arc), ("gz", arc_gz), ("warc", twin)):
        done = warc_import(tmp_path, archive, source_id=name)
        assert "imported 1 snapshot(s)" in done.stdout and "skipped 0" in done.stdout
        assert warnings(done) == []
        snapshot = latest(tmp_path, url, name)
        assert snapshot is not None and snapshot["fetchedAt"] == "2014-02-16T05:02:21.000Z"
        bodies.append((snapshot["body"], snapshot["bodyHash"]))
    assert bodies[0] == bodies[1] == bodies[2] and bodies[0][0] == PAGE.decode()


@pytest.mark.parametrize("order", ["original first", "revisits first"])
def test_revisits_take_their_originals_payload_and_their_own_date(tmp_path, order):
    original = warc(
        [("response", "http://example.com/page", "2020-01-01T00:00:00Z", PAGE.decode())]
    )
    digest = payload_digest(original)
    revisits = warc([
        # URL-agnostic: the original is another URL's capture with the same payload.
        ("revisit", "http://example.com/copy", "2021-06-01T00:00:00Z",
         "identical-payload-digest", "http://example.com/page", "2020-01-01T00:00:00Z", digest),
        ("revisit", "http://example.com/page", "2022-01-01T00:00:00Z",
         "identical-payload-digest", "http://example.com/page", "2020-01-01T00:00:00Z", digest),
        ("revisit", "http://example.com/gone", "2022-01-01T00:00:00Z",
         "identical-payload-digest", "http://example.com/gone", "2020-01-01T00:00:00Z",
         "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
    ])  # fmt: skip
    (tmp_path / "a.warc.gz").write_bytes(original)
    (tmp_path / "b.warc.gz").write_bytes(revisits)
    files = ["a.warc.gz", "b.warc.gz"]
    if order == "revisits first":
        files.reverse()
    done = warc_import(tmp_path, *(tmp_path / f for f in files))
    assert "imported 3 snapshot(s)" in done.stdout
    assert "1 revisit(s) without their original not imported" in done.stdout
    (warning,) = warnings(done)
    assert warning.startswith(f"warning: {tmp_path / 'b.warc.gz'}: 1 revisit record(s)")
    copy = latest(tmp_path, "http://example.com/copy")
    page = latest(tmp_path, "http://example.com/page")
    assert copy is not None and page is not None
    assert (copy["body"], copy["fetchedAt"]) == (PAGE.decode(), "2021-06-01T00:00:00.000Z")
    assert (page["body"], page["fetchedAt"]) == (PAGE.decode(), "2022-01-01T00:00:00.000Z")
    assert latest(tmp_path, "http://example.com/gone") is None


def test_a_304_revisit_takes_the_latest_earlier_capture_of_its_url(tmp_path):
    url = "http://example.com/page"
    (tmp_path / "later.warc.gz").write_bytes(warc([
        ("revisit", url, "2021-01-01T00:00:00Z", "server-not-modified", url,
         "2020-06-01T00:00:00Z", EMPTY_SHA1),
    ]))  # fmt: skip
    (tmp_path / "earlier.warc.gz").write_bytes(warc([
        ("response", url, "2020-01-01T00:00:00Z", OTHER.decode()),
        ("response", url, "2020-06-01T00:00:00Z", PAGE.decode()),
        ("response", url, "2023-01-01T00:00:00Z", OTHER.decode()),
    ]))  # fmt: skip
    done = warc_import(tmp_path, tmp_path / "later.warc.gz", tmp_path / "earlier.warc.gz")
    assert warnings(done) == []
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    by_date = {s["fetchedAt"]: s["body"] for s in store.list(f"t::{url}")}
    assert by_date["2021-01-01T00:00:00.000Z"] == PAGE.decode()


def test_a_single_member_gzip_is_read_with_one_warning(tmp_path):
    plain = warc(
        [
            ("response", "http://example.com/a", "2020-01-01T00:00:00Z", PAGE.decode()),
            ("request", "http://example.com/a", "2020-01-01T00:00:00Z", "GET"),
            ("response", "http://example.com/b", "2020-01-01T00:00:00Z", OTHER.decode()),
        ],
        gzipped=False,
    )
    one = tmp_path / "one.warc.gz"
    one.write_bytes(gzip.compress(plain))
    done = warc_import(tmp_path, one)
    assert "imported 2 snapshot(s)" in done.stdout and "skipped 0" in done.stdout
    (warning,) = warnings(done)
    assert warning.startswith(f"warning: {one}: ") and "read sequentially" in warning
    assert latest(tmp_path, "http://example.com/b")["body"] == OTHER.decode()  # type: ignore[index]


def test_a_post_response_is_not_a_page_and_is_counted(tmp_path):
    archive = tmp_path / "post.warc.gz"
    archive.write_bytes(warc([
        ("response", "http://example.com/form", "2020-01-01T00:00:00Z", OTHER.decode()),
        ("request", "http://example.com/form", "2020-01-01T00:00:00Z", "POST"),
        ("response", "http://example.com/page", "2020-01-01T00:00:00Z", PAGE.decode()),
        ("request", "http://example.com/page", "2020-01-01T00:00:00Z", "GET"),
    ]))  # fmt: skip
    done = warc_import(tmp_path, archive)
    assert "imported 1 snapshot(s)" in done.stdout
    assert "1 response(s) to a request other than GET not imported" in done.stdout
    assert latest(tmp_path, "http://example.com/form") is None


def test_urls_are_normalised_so_a_replay_from_the_normal_seed_finds_them(tmp_path):
    archive = tmp_path / "site.warc.gz"
    archive.write_bytes(warc([
        ("response", "http://example.com", "2020-01-01T00:00:00Z", PAGE.decode()),
        ("response", "http://example.com/next.html#top", "2020-01-01T00:00:00Z", OTHER.decode()),
    ]))  # fmt: skip
    done = warc_import(tmp_path, archive, source_id="site")
    assert "imported 2 snapshot(s)" in done.stdout
    assert "2 URL(s) stored in normal form" in done.stdout
    replay = scrapy(
        "crawl", "traverse", "-a", "url=http://example.com/", "-a", "source_id=site",
        "-s", "TRAVERSE_MODE=replay", *crawl_args(tmp_path), timeout=120,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr
    (manifest_path,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(manifest_path.read_text())
    fetched = {p["url"]: p["fetch"] for p in manifest["pages"]}
    assert fetched["http://example.com/"]["snapshot"]["fromCache"] is True
    assert fetched["http://example.com/next.html"]["snapshot"]["fromCache"] is True


@pytest.mark.parametrize("gzipped", [False, True])
def test_a_record_cut_short_at_the_end_is_skipped_with_a_warning(tmp_path, gzipped):
    whole = warc(
        [
            ("response", "http://example.com/a", "2020-01-01T00:00:00Z", PAGE.decode()),
            ("response", "http://example.com/b", "2020-01-01T00:00:00Z", PAGE.decode() * 20),
        ],
        gzipped=False,
    )
    offsets = [0, whole.index(b"WARC/1.", 10)]
    cut = whole[: len(whole) - 300]  # inside the last record's payload
    if gzipped:  # one member per record, as warcio writes them
        cut = gzip.compress(cut[: offsets[1]]) + gzip.compress(cut[offsets[1] :])
    archive = tmp_path / ("cut.warc.gz" if gzipped else "cut.warc")
    archive.write_bytes(cut)
    done = warc_import(tmp_path, archive)
    assert "imported 1 snapshot(s)" in done.stdout and "skipped 1" in done.stdout
    (warning,) = warnings(done)
    assert warning.startswith(f"warning: {archive}: skipped record at offset ")
    assert latest(tmp_path, "http://example.com/b") is None


def test_warcios_console_warning_is_one_of_ours(tmp_path):
    block = b"text with a wrong length"
    record = (
        (
            b"WARC/1.0\r\nWARC-Type: resource\r\nWARC-Target-URI: http://example.com/note\r\n"
            b"WARC-Date: 2020-01-01T00:00:00Z\r\n"
            b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
            b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % (len(block) - 6)
        )
        + block
        + b"\r\n\r\n"
    )
    archive = tmp_path / "bad-length.warc"
    archive.write_bytes(record)
    done = warc_import(tmp_path, archive)
    lines = warnings(done)
    assert lines and all(line.startswith(f"warning: {archive}: ") for line in lines)
    assert any("Content-Length" in line for line in lines)


@pytest.mark.pywb
@pytest.mark.skipif(not SAMPLES.is_dir(), reason="needs pywb's sample archives")
def test_pywbs_sample_archives(tmp_path):
    done = warc_import(tmp_path, SAMPLES / "example.arc.gz", source_id="arc")
    assert "imported 1 snapshot(s)" in done.stdout
    done = warc_import(tmp_path, SAMPLES / "post-test.warc.gz", source_id="post")
    assert "imported 0 snapshot(s)" in done.stdout
    assert "3 response(s) to a request other than GET not imported" in done.stdout
    done = warc_import(
        tmp_path,
        SAMPLES / "example-url-agnostic-revisit.warc.gz",
        SAMPLES / "example-url-agnostic-orig.warc.gz",
        source_id="agnostic",
    )
    assert "imported 2 snapshot(s)" in done.stdout and warnings(done) == []
    revisit = latest(tmp_path, "http://test@example.com/", "agnostic")
    original = latest(tmp_path, "http://example.iana.org/", "agnostic")
    assert revisit is not None and original is not None
    assert revisit["bodyHash"] == original["bodyHash"]
    assert revisit["fetchedAt"] == "2013-07-29T19:51:51.000Z"
    done = warc_import(tmp_path, SAMPLES / "example-bad.warc.gz.bad", source_id="one")
    (warning,) = warnings(done)
    assert "read sequentially" in warning and "imported 2 snapshot(s)" in done.stdout


def test_an_import_holds_one_record_not_a_file(tmp_path):
    # 80 records of 1 MB each (a small file: the payloads compress well). Holding
    # every snapshot of the file took twice the memory of the command itself.
    archive = tmp_path / "big.warc.gz"
    archive.write_bytes(
        warc(
            [
                ("response", f"http://example.com/{n}", "2020-01-01T00:00:00Z", "x" * 1_000_000)
                for n in range(80)
            ]
        )
    )
    # A small parent measures the command: a child forked from pytest inherits its peak.
    measure = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr);"
        "sys.exit(done.returncode)"
    )
    command = [sys.executable, "-c", measure, sys.executable, "-m", "scrapy", "warc", "import"]
    options = ["--source-id", "t", "-s", f"TRAVERSE_STORE={tmp_path / 'store'}"]
    done = subprocess.run(
        [*command, str(archive), *options],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "imported 80 snapshot(s)" in done.stdout, done.stderr
    peak = int(done.stderr.splitlines()[-1])
    assert peak < 115 * 1024, f"peak {peak // 1024} MB"
