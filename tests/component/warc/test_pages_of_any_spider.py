"""WARC metadata records for the responses of requests that are not frontier pages."""

from __future__ import annotations

from typing import Any

import pytest_twisted
import scrapy
from warcio.archiveiterator import ArchiveIterator

from tests.support.server import Reply
from tests.support.warctools import warc_files
from traverse_crawl import TraverseSpider


class WithExtras(TraverseSpider):
    name = "extras"

    def parse_page(self, response: Any, page: dict[str, Any]) -> Any:
        for path in ("/extra.txt", "/missing.txt"):
            yield scrapy.Request(response.urljoin(path), callback=self.parse_extra)

    def parse_extra(self, response: Any) -> Any:
        yield {"extra": response.url}


def metadata(directory: Any) -> dict[str, dict[str, str]]:
    """Each metadata record's fields, by its target URI."""
    found: dict[str, dict[str, str]] = {}
    for path in warc_files(directory):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "metadata":
                    text = record.content_stream().read().decode("utf-8")
                    fields = dict(line.split(": ", 1) for line in text.split("\r\n") if line)
                    found[record.rec_headers.get_header("WARC-Target-URI")] = fields
    return found


@pytest_twisted.ensureDeferred
async def test_each_page_of_any_request_gets_its_metadata_record(server, crawl, tmp_path):
    server.site({"/": "<p>home</p>", "/extra.txt": Reply(body="x", content_type="text/plain")})
    warc_dir = tmp_path / "warc"
    result = await crawl(
        settings={"TRAVERSE_WARC_DIR": str(warc_dir), "TRAVERSE_MAX_DEPTH": 0},
        spidercls=WithExtras,
        url=server.url("/"),
        source_id="s",
    )
    (extra,) = [i for i in result.items if "extra" in i]
    records = metadata(warc_dir)
    assert records[server.url("/")]["pageId"] == "s::" + server.url("/")
    stored = records[server.url("/extra.txt")]
    assert stored["pageId"] == "extras::" + server.url("/extra.txt")
    assert stored["sourceRef"] == extra["sourceRef"] and stored["status"] == "200"
    missing = records[server.url("/missing.txt")]
    assert missing == {"pageId": "extras::" + server.url("/missing.txt"), "error": "http-error"}
    assert result.stats["warc/metadata"] == 3
