"""An ARC record whose length is not a number (pywb's sample ``bad.arc``: a ``filedesc``
line of length ``-1``, responses of length ``-1`` and ``abc``) is skipped with a warning
naming it, and the records after it are read and imported, as pywb reads them; the import
exits 0 (docs/web-archives.md, "Exit status")."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_warc_import_other_tools import HTTP_PAGE, latest, warnings
from tests.support.cli import scrapy

# pywb's sample_archive/warcs/bad.arc, byte for byte: what each of its records is.
BAD_ARC = (
    b"filedesc://bad.arc.gz 127.0.0.1 20140301000000 text/plain -1\n"
    b"1 0 Bad Capture\n"
    b"URL IP-address Archive-date Content-type Archive-length\n"
    b"\n"
    b"http://example.com/ 93.184.216.119 201404010000000000 text/html -1\n"
    b"\n"
    b"http://example.com/ 127.0.0.1 20140102000000 text/plain 1\n"
    b"\n"
    b"\n"
    b"http://example.com/ 93.184.216.119 201404010000000000 text/html abc\n"
    b"\n"
)
GOOD_URL = "http://example.org/after"


def good_record() -> bytes:
    line = b"%s 127.0.0.1 20140216050221 text/html %d\n" % (GOOD_URL.encode(), len(HTTP_PAGE))
    return line + HTTP_PAGE + b"\n"


def warc_import(tmp_path: Path, archive: Path) -> subprocess.CompletedProcess[str]:
    return scrapy(
        "warc", "import", str(archive), "--source-id", "t",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}", timeout=120,
    )  # fmt: skip


def test_pywbs_bad_arc_is_read_past_its_bad_records_and_exits_0(tmp_path):
    archive = tmp_path / "bad.arc"
    archive.write_bytes(BAD_ARC)
    done = warc_import(tmp_path, archive)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    lines = warnings(done)
    assert lines == [
        f"warning: {archive}: skipped record at offset 0: warcinfo record 'bad.arc.gz': "
        "its length '-1' is not a whole number",
        f"warning: {archive}: skipped record at offset 134: response record "
        "'http://example.com/': its length '-1' is not a whole number",
        f"warning: {archive}: skipped record at offset 262: response record "
        "'http://example.com/': its length 'abc' is not a whole number",
    ]
    # The one whole record (at offset 202) is read; it holds no HTTP response, so no page.
    assert done.stdout.startswith("imported 0 snapshot(s) from 1 record(s)"), done.stdout
    assert "skipped 3 malformed record(s)" in done.stdout


@pytest.mark.parametrize("gzipped", [False, True])
def test_the_pages_after_a_record_of_no_length_are_imported(tmp_path, gzipped):
    records = [BAD_ARC[:134], BAD_ARC[134:202], BAD_ARC[202:262], BAD_ARC[262:], good_record()]
    archive = tmp_path / ("bad.arc.gz" if gzipped else "bad.arc")
    # An ARC.gz has one gzip member per record.
    archive.write_bytes(b"".join(gzip.compress(r) if gzipped else r for r in records))
    done = warc_import(tmp_path, archive)
    assert done.returncode == 0, done.stderr
    lines = warnings(done)
    assert len(lines) == 3 and all("is not a whole number" in line for line in lines), lines
    assert "skipped record at offset 0: warcinfo record 'bad.arc.gz'" in lines[0]
    assert done.stdout.startswith("imported 1 snapshot(s) from 2 record(s)"), done.stdout
    snapshot = latest(tmp_path, GOOD_URL)
    assert snapshot is not None and snapshot["status"] == 200


def test_an_archive_whose_only_capture_has_no_length_is_exit_1(tmp_path):
    desc = b"1 0 test\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://one.arc 127.0.0.1 20140301000000 text/plain %d\n" % len(desc)
    archive = tmp_path / "one.arc"
    archive.write_bytes(head + desc + b"\n" + BAD_ARC[262:])  # a whole filedesc, then "abc"
    done = warc_import(tmp_path, archive)
    assert done.returncode == 1, done.stderr  # nothing but the file's header was whole
    (line,) = warnings(done)
    assert line.endswith(
        "response record 'http://example.com/': its length 'abc' is not a whole number"
    )
