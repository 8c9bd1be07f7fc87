"""A snapshot exported as WARC records: control characters in what it stores never
become WARC syntax."""

from __future__ import annotations

from io import BytesIO

from warcio.archiveiterator import ArchiveIterator

from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.warc.export import write_warc


def test_a_stored_url_or_date_with_cr_lf_injects_no_header_and_no_record():
    snapshot = build_snapshot(
        source_id="page",
        url="http://h/p\r\nX-Injected: 1\r\n\r\nWARC/1.1",
        status=200,
        content_type="text",
        raw_body=b"hello",
        content_type_header="text/plain",
        fetched_at="2026-07-01T00:00:00.000Z\nX-Date: 2",
    )
    out = BytesIO()
    list(write_warc(out, [snapshot], {"software": "test"}, "x.warc.gz"))
    out.seek(0)
    records, blocks = [], []
    for record in ArchiveIterator(out):  # a record's block is read before the next one
        records.append(record)
        blocks.append(record.content_stream().read())
    assert [r.rec_type for r in records] == ["warcinfo", "resource", "metadata"]
    resource = records[1]
    names = {name.lower() for name, _ in resource.rec_headers.headers}
    assert "x-injected" not in names and "x-date" not in names
    uri = resource.rec_headers.get_header("WARC-Target-URI")
    assert uri == "http://h/p%0D%0AX-Injected:%201%0D%0A%0D%0AWARC/1.1"  # warcio: the %20
    fields = blocks[2].decode().split("\r\n")
    assert "fetchedAt: 2026-07-01T00:00:00.000Z%0AX-Date: 2" in fields
    assert not any(line.startswith("X-Date") for line in fields)
