"""A truncated HTML page imported from an archive (warc/importer.py) keeps its body as
written, and its links are those a crawl reads from the same page (crawl/links.py):
the import parses no markup."""

from __future__ import annotations

import io

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from traverse_crawl.crawl.links import find_links
from traverse_crawl.warc.importer import ImportReport, candidates, file_source

pytestmark = pytest.mark.parsing

PAGES = {
    "http://a.test/": b'<p><a href="/a">A</a><a href="/b',  # cut inside an attribute
    "http://a.test/two": b'<div><ul><li><a href="/c">C<li><a href="/d">D',  # left open
    "http://a.test/three": b'<a href="/e">E</a><<>></span><a href="/f">F</a><a hr',
}


def test_truncated_pages_are_imported_as_written_and_read_for_links(tmp_path):
    path = tmp_path / "pages.warc"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=False)
        for url, html in PAGES.items():
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], "HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(
                    url, "response", payload=io.BytesIO(html), length=len(html),
                    http_headers=headers,
                )
            )  # fmt: skip
    report = ImportReport()
    snapshots = list(candidates([file_source(str(path))], "archive", report))
    assert report.warnings == []
    assert {s["url"]: s["body"] for s in snapshots} == {
        url: html.decode() for url, html in PAGES.items()
    }
    links = {s["url"]: find_links(s["body"], s["url"], "http://a.test")[0] for s in snapshots}
    assert links == {
        "http://a.test/": ["http://a.test/a"],
        "http://a.test/two": ["http://a.test/c", "http://a.test/d"],
        "http://a.test/three": ["http://a.test/e", "http://a.test/f"],
    }
