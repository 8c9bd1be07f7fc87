"""``scrapy warc import`` on hostile archives: payloads that inflate, metadata records
that lie, inputs that are not archives, bytes meant for the terminal (docs/web-archives.md).

Every archive is built here with warcio's writer or by hand.
"""

from __future__ import annotations

import gzip
import io
import os
import resource
import subprocess
import sys
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import brotli
import pytest
from warcio.warcwriter import WARCWriter

from tests.support.bombs import brotli_zeros, gzip_zeros
from tests.support.cli import REPO, scrapy, scrapy_env
from tests.support.warctools import write_response as response
from traverse_crawl.snapshots.store import check_snapshot_text

PAGE = b"<html><body><p>small page</p></body></html>"
DECODED = 96 * 1024 * 1024  # what the hostile payloads inflate to
LIMIT = 1_000_000  # the DOWNLOAD_MAXSIZE the tests give
GIB = 1 << 30
DEFAULT_MAXSIZE = 32 * 1024 * 1024  # the add-on's DOWNLOAD_MAXSIZE (docs/settings.md)


def metadata(writer: WARCWriter, url: str, refers_to: str, block: bytes) -> None:
    record = writer.create_warc_record(
        url, "metadata", payload=io.BytesIO(block), length=len(block),
        warc_content_type="application/warc-fields",
        warc_headers_dict={"WARC-Date": "2020-01-01T00:00:00Z", "WARC-Concurrent-To": refers_to},
    )  # fmt: skip
    writer.write_record(record)


def zeros(encoding: str) -> tuple[bytes, list[tuple[str, str]]]:
    """``DECODED`` bytes of one letter in ``encoding``: a payload and its headers."""
    data = b"a" * DECODED
    if encoding == "br":
        return brotli.compress(data, quality=1), [("Content-Encoding", "br")]
    if encoding == "deflate":
        return zlib.compress(data, 9), [("Content-Encoding", "deflate")]
    packed = gzip.compress(data, 9)
    if encoding == "gzip":
        return packed, [("Content-Encoding", "gzip")]
    pieces = [packed[i : i + 4096] for i in range(0, len(packed), 4096)]
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    return chunked, [("Content-Encoding", "gzip"), ("Transfer-Encoding", "chunked")]


def measured_import(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """``scrapy warc import ARGS`` and its peak RSS in KiB, measured by a small parent
    (a child forked from pytest inherits pytest's peak)."""
    measure = (
        "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:]);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr);"
        "sys.exit(done.returncode)"
    )
    command = [sys.executable, "-c", measure, sys.executable, "-m", "scrapy", "warc", "import"]
    done = subprocess.run(
        [*command, *args, "-s", f"TRAVERSE_STORE={tmp_path / 'store'}"],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    *_, peak = done.stderr.splitlines()
    done.stderr = done.stderr[: -len(peak) - 1]
    return done, int(peak)


def store_files(tmp_path: Path) -> list[dict[str, Any]]:
    """Every snapshot file of the store, each one a valid snapshot."""
    found = []
    for path in sorted((tmp_path / "store").rglob("*.json")):
        parsed = check_snapshot_text(path.read_text())
        assert isinstance(parsed, dict), f"{path}: {parsed}"
        found.append(dict(parsed))
    return found


def assert_bomb_refused(done: Any, tmp_path: Path, archive: Path, limit: int) -> None:
    """The import of a bomb (offset 0) and a page: the page imported, the bomb counted and
    named in one warning line, and only the page in the store."""
    assert done.returncode == 0, done.stderr
    assert "imported 1 snapshot(s) from 2 record(s)" in done.stdout
    assert "1 record(s) larger than DOWNLOAD_MAXSIZE not imported" in done.stdout
    (warning,) = done.stderr.splitlines()
    assert warning == (
        f"warning: {archive}: skipped record at offset 0: http://example.com/bomb: "
        f"payload larger than DOWNLOAD_MAXSIZE ({limit} bytes)"
    )
    assert [s["url"] for s in store_files(tmp_path)] == ["http://example.com/page"]


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "chunked+gzip"])
def test_a_payload_is_not_decoded_beyond_download_maxsize(tmp_path, encoding):
    archive = tmp_path / "bomb.warc.gz"
    with archive.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        payload, headers = zeros(encoding)
        response(writer, "http://example.com/bomb", payload, headers)
        response(writer, "http://example.com/page", PAGE, [])
    assert archive.stat().st_size < 200_000
    done, peak = measured_import(
        tmp_path, str(archive), "--source-id", "t", "-s", f"DOWNLOAD_MAXSIZE={LIMIT}"
    )
    assert_bomb_refused(done, tmp_path, archive, LIMIT)
    assert peak < 110 * 1024, f"peak {peak // 1024} MB"


@pytest.mark.parametrize("encoding", ["gzip", "br"])
def test_a_bomb_is_refused_at_the_default_download_maxsize(tmp_path, encoding):
    # A few KB that inflate to a GiB, and no DOWNLOAD_MAXSIZE given: the add-on's 32 MiB
    # bounds the import as it bounds a crawl's download.
    archive = tmp_path / "bomb.warc.gz"
    with archive.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        payload = gzip_zeros(GIB) if encoding == "gzip" else brotli_zeros(GIB)
        response(writer, "http://example.com/bomb", payload, [("Content-Encoding", encoding)])
        response(writer, "http://example.com/page", PAGE, [])
    assert archive.stat().st_size < 10_000
    started = time.monotonic()
    done, peak = measured_import(tmp_path, str(archive), "--source-id", "t")
    elapsed = time.monotonic() - started
    assert_bomb_refused(done, tmp_path, archive, DEFAULT_MAXSIZE)
    # Nothing of the bomb is stored: one snapshot file, the page's.
    stored = [path for path in (tmp_path / "store").rglob("*") if path.is_file()]
    assert len(stored) == 1 and stored[0].stat().st_size < 10_000, stored
    assert peak < 200 * 1024, f"peak {peak // 1024} MB"
    assert elapsed < 15, f"{elapsed:.1f} s"


def test_a_payload_within_download_maxsize_is_decoded(tmp_path):
    archive = tmp_path / "fine.warc.gz"
    body = b"<p>" + b"z" * 500_000 + b"</p>"
    with archive.open("wb") as out:
        response(WARCWriter(out, gzip=True), "http://example.com/", gzip.compress(body),
                 [("Content-Encoding", "gzip")])  # fmt: skip
    done = scrapy(
        "warc", "import", str(archive), "--source-id", "t",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}", "-s", f"DOWNLOAD_MAXSIZE={LIMIT}",
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    (snapshot,) = store_files(tmp_path)
    assert snapshot["body"] == body.decode()


def ours(**fields: str) -> bytes:
    """A metadata block that claims to be traverse_crawl's (warc/export.py's fields)."""
    base = {"pageId": "s::http://example.com/page", "fetchedAt": "2020-01-01T00:00:00.000Z"}
    return "".join(f"{k}: {v}\r\n" for k, v in {**base, **fields}.items()).encode()


@pytest.mark.parametrize(
    "fields",
    [
        {"fetchedAt": "2020/01/01T00:00:00.000Z"},  # a "/" would leave the store's directory
        {"fetchedAt": "2" * 300},  # a file name too long for any filesystem
        {"fetchedAt": "2020-13-45T99:99:99.000Z"},
        {"status": "2000"},
        {"redirects": '{"not": "a list"}'},
        {"redirects": "[1, 2]"},
        {"redirects": "[" * 100_000 + "]" * 100_000},  # nested past the parser's depth
        {"rendered": "yes"},
        {"pageId": "no page id"},
    ],
)
def test_a_metadata_record_that_claims_to_be_ours_is_checked(tmp_path, fields):
    archive = tmp_path / "claims.warc.gz"
    with archive.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        first = response(writer, "http://example.com/page", PAGE, [])
        metadata(writer, "http://example.com/page", first, ours(**fields))
        second = response(writer, "http://example.com/other", PAGE, [])
        metadata(writer, "http://example.com/other", second,
                 ours(pageId="s::http://example.com/other"))  # fmt: skip
    done = scrapy(
        "warc", "import", str(archive), "--source-id", "t",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (warning,) = done.stderr.splitlines()
    assert warning.startswith(f"warning: {archive}: skipped record at offset ")
    assert "metadata record: " + next(iter(fields)) in warning
    assert len(warning) < 300
    assert "imported 2 snapshot(s)" in done.stdout
    assert "1 metadata record(s) with invalid fields not used" in done.stdout
    # The page whose metadata lied is imported as the response says; the other as ours.
    by_url = {s["url"]: s for s in store_files(tmp_path)}
    assert by_url["http://example.com/page"]["fetchedAt"] == "2020-01-01T00:00:00.000Z"
    assert "redirects" not in by_url["http://example.com/page"]
    assert by_url["http://example.com/other"]["sourceId"] == "t::http://example.com/other"


def plain_warc(count: int, size: int) -> bytes:
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=False)
    for n in range(count):
        body = (b"<p>%d</p>" % n) + os.urandom(size // 2).hex().encode()[:size]
        response(writer, f"http://example.com/{n}", body, [])
    return out.getvalue()


def wacz(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr("datapackage.json", "{}")
    return path


def import_command(tmp_path: Path, *files: Path | str) -> list[str]:
    return [sys.executable, "-m", "scrapy", "warc", "import", *map(str, files),
            "--source-id", "t", "-s", f"TRAVERSE_STORE={tmp_path / 'store'}"]  # fmt: skip


def test_a_wacz_is_read_in_place_not_copied_to_a_temporary_file(tmp_path):
    # Three 1 MB pages in a 3 MB WACZ member; the import may write no file larger
    # than 2 MB (RLIMIT_FSIZE), so a copy of the member cannot be made anywhere.
    package = wacz(tmp_path / "site.wacz", {"archive/data.warc": plain_warc(3, 1_000_000)})
    limit = 2_000_000

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        import_command(tmp_path, package), cwd=REPO, env=scrapy_env(), capture_output=True,
        text=True, timeout=120, check=False, preexec_fn=small_files,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "imported 3 snapshot(s)" in done.stdout and done.stderr == ""
    assert len(store_files(tmp_path)) == 3


def test_an_import_that_imports_nothing_for_errors_exits_1(tmp_path):
    not_zip = tmp_path / "broken.wacz"
    not_zip.write_bytes(b"PK\x03\x04" + b"\x00" * 100)  # a ZIP's magic, then nothing
    done = scrapy(*import_command(tmp_path, not_zip)[3:])
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"warning: {not_zip}: ")
    assert "imported 0 snapshot(s)" in done.stdout
    empty = tmp_path / "empty.warc.gz"  # nothing wrong, nothing to import: 0
    empty.write_bytes(b"")
    assert scrapy(*import_command(tmp_path, empty)[3:]).returncode == 0


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_an_input_that_is_not_a_file_is_a_bad_command_line(tmp_path, what):
    given = tmp_path / "input"
    if what == "directory":
        given.mkdir()
    good = tmp_path / "good.warc"
    good.write_bytes(plain_warc(1, 100))
    done = scrapy(*import_command(tmp_path, good, given)[3:])
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"error: {given}: ")
    assert not (tmp_path / "store").exists()  # checked before anything is imported


def test_archive_bytes_in_warnings_cannot_drive_the_terminal(tmp_path):
    hostile = "archive/\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x9b2J.warc"
    package = wacz(tmp_path / "x.wacz", {hostile: b"this is not a web archive\n"})
    done = scrapy(*import_command(tmp_path, package)[3:])
    assert done.stderr.startswith("warning: ")
    assert not any(c in done.stderr for c in "\x1b\x07\x9b"), repr(done.stderr)
    assert "\\x1b]8;;http://evil.example/\\x07click" in done.stderr


def test_an_invalid_download_maxsize_is_a_bad_setting(tmp_path):
    good = tmp_path / "good.warc"
    good.write_bytes(plain_warc(1, 100))
    done = scrapy(*import_command(tmp_path, good)[3:], "-s", "DOWNLOAD_MAXSIZE=1e6")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: DOWNLOAD_MAXSIZE")
