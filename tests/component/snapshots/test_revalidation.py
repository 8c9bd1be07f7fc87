"""Conditional GET with stored validators (docs/snapshots.md, "Revalidation")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.support.server import Handler, Reply, Server
from traverse_crawl.fetch.urls import page_id
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

LAST_MODIFIED = "Wed, 01 Jul 2026 00:00:00 GMT"


class Resource:
    """A page whose content and validators the test changes between crawls."""

    def __init__(self, body: str, etag: str | None = None, last_modified: str | None = None):
        self.body = body
        self.etag = etag
        self.last_modified = last_modified
        self.seen: list[dict[str, str]] = []  # conditional headers of each request

    def __call__(self, handler: Handler) -> Reply:
        inm = handler.headers.get("If-None-Match")
        ims = handler.headers.get("If-Modified-Since")
        self.seen.append(
            {k: v for k, v in (("If-None-Match", inm), ("If-Modified-Since", ims)) if v is not None}
        )
        headers = {}
        if self.etag:
            headers["ETag"] = self.etag
        if self.last_modified:
            headers["Last-Modified"] = self.last_modified
        fresh = (self.etag and inm == self.etag) or (
            self.last_modified and not inm and ims == self.last_modified
        )
        if fresh:
            return Reply(304, b"", headers=headers, content_type=None)
        return Reply(body=self.body, headers=headers)


def files(tmp_path: Path, source_id: str) -> list[Path]:
    directory = Path(FilesystemSnapshotStore(str(tmp_path / "store")).directory(source_id))
    return sorted(directory.glob("*.json"))


REVALIDATE = {"TRAVERSE_REVALIDATE": True, "TRAVERSE_MAX_DEPTH": 0}


async def _three_crawls(
    server: Server, crawl: Any, tmp_path: Path, resource: Resource, header: str, value: str
) -> None:
    url = server.url("/page.html")
    pid = page_id("s", url)

    first = await crawl(settings=REVALIDATE, url=url, source_id="s")
    prior = first.manifest["pages"][0]["fetch"]["snapshot"]
    assert resource.seen == [{}]  # nothing stored yet: an unconditional GET
    assert "revalidate/conditional" not in first.stats
    (stored,) = files(tmp_path, pid)

    # 304: the prior, byte for byte, flagged; the same file rewritten with the flags.
    second = await crawl(settings=REVALIDATE, url=url, source_id="s")
    assert resource.seen[1] == {header: value}
    page = second.manifest["pages"][0]
    assert page["fetch"] == {"snapshot": {**prior, "fromCache": True, "notModified": True}}
    assert page["sourceRef"] == first.manifest["pages"][0]["sourceRef"]
    assert second.stats["revalidate/conditional"] == 1
    assert second.stats["revalidate/not_modified"] == 1
    assert files(tmp_path, pid) == [stored]
    on_disk = json.loads(stored.read_text(encoding="utf-8"))
    assert on_disk["fromCache"] is True and on_disk["notModified"] is True
    assert on_disk["body"] == resource.body and on_disk["fetchedAt"] == prior["fetchedAt"]

    # 200: a new snapshot with a new hash, next to the old one.
    resource.body = "<p>changed</p>"
    if resource.etag:
        resource.etag = '"v2"'
    if resource.last_modified:
        resource.last_modified = "Thu, 02 Jul 2026 00:00:00 GMT"
    third = await crawl(settings=REVALIDATE, url=url, source_id="s")
    assert resource.seen[2] == {header: value}  # still the stored validator
    fresh = third.manifest["pages"][0]["fetch"]["snapshot"]
    assert fresh["bodyHash"] != prior["bodyHash"]
    assert "fromCache" not in fresh and "notModified" not in fresh
    assert "revalidate/not_modified" not in third.stats
    assert len(files(tmp_path, pid)) == 2
    latest = FilesystemSnapshotStore(str(tmp_path / "store")).latest(pid)
    assert latest is not None and latest["body"] == "<p>changed</p>"


@pytest_twisted.ensureDeferred
async def test_etag_304_then_200(server, crawl, tmp_path):
    resource = Resource("<p>hello</p>", etag='W/"v1"')
    server.routes["/page.html"] = resource
    await _three_crawls(server, crawl, tmp_path, resource, "If-None-Match", 'W/"v1"')


@pytest_twisted.ensureDeferred
async def test_last_modified_304_then_200(server, crawl, tmp_path):
    resource = Resource("<p>hello</p>", last_modified=LAST_MODIFIED)
    server.routes["/page.html"] = resource
    await _three_crawls(server, crawl, tmp_path, resource, "If-Modified-Since", LAST_MODIFIED)


@pytest_twisted.ensureDeferred
async def test_both_validators_are_sent(server, crawl):
    resource = Resource("<p>hello</p>", etag='"e"', last_modified=LAST_MODIFIED)
    server.routes["/page.html"] = resource
    await crawl(settings=REVALIDATE, url=server.url("/page.html"))
    await crawl(settings=REVALIDATE, url=server.url("/page.html"))
    assert resource.seen[1] == {"If-None-Match": '"e"', "If-Modified-Since": LAST_MODIFIED}


@pytest_twisted.ensureDeferred
async def test_validators_go_only_to_the_url_that_produced_them(server, crawl):
    # /old redirects to /new; the prior's URL is /new, so only that hop is conditional.
    resource = Resource("<p>new</p>", etag='"n1"')
    server.routes["/new.html"] = resource
    old_hits: list[dict[str, str]] = []

    def old(handler: Handler) -> Reply:
        old_hits.append({k: v for k, v in handler.headers.items() if k.lower().startswith("if-")})
        return Reply(302, b"", headers={"Location": "/new.html"})

    server.routes["/old.html"] = old
    url = server.url("/old.html")
    first = await crawl(settings=REVALIDATE, url=url, source_id="s")
    prior = first.manifest["pages"][0]["fetch"]["snapshot"]
    assert prior["url"] == server.url("/new.html")
    second = await crawl(settings=REVALIDATE, url=url, source_id="s")
    assert old_hits == [{}, {}]
    assert resource.seen == [{}, {"If-None-Match": '"n1"'}]
    snapshot = second.manifest["pages"][0]["fetch"]["snapshot"]
    assert snapshot == {**prior, "fromCache": True, "notModified": True}
    assert snapshot["redirects"] == [url]


@pytest_twisted.ensureDeferred
async def test_unexpected_304_is_http_error(server, crawl):
    # No prior at all, then a prior without validators: no conditional GET, so a
    # 304 cannot be trusted.
    server.routes["/always304.html"] = Reply(304, b"", content_type=None)
    url = server.url("/always304.html")
    result = await crawl(settings=REVALIDATE, url=url, source_id="s")
    expected = {
        "kind": "http-error",
        "message": f"unexpected 304 Not Modified from {url} without validators "
        "from a matching prior snapshot",
        "status": 304,
    }
    assert result.manifest["pages"][0]["fetch"] == {"error": expected}

    plain = Resource("<p>no validators</p>")
    server.routes["/plain.html"] = plain
    await crawl(settings=REVALIDATE, url=server.url("/plain.html"), source_id="s")
    server.routes["/plain.html"] = Reply(304, b"", content_type=None)
    again = await crawl(settings=REVALIDATE, url=server.url("/plain.html"), source_id="s")
    error = again.manifest["pages"][0]["fetch"]["error"]
    assert error["kind"] == "http-error" and error["status"] == 304
    assert "revalidate/conditional" not in again.stats


@pytest_twisted.ensureDeferred
async def test_live_mode_reads_validators_but_writes_nothing(server, crawl, tmp_path):
    resource = Resource("<p>hello</p>", etag='"v1"')
    server.routes["/page.html"] = resource
    url = server.url("/page.html")
    await crawl(settings=REVALIDATE, url=url, source_id="s")
    (stored,) = files(tmp_path, page_id("s", url))
    before = stored.read_bytes()
    live = await crawl(settings={**REVALIDATE, "TRAVERSE_MODE": "live"}, url=url, source_id="s")
    assert resource.seen[1] == {"If-None-Match": '"v1"'}
    assert live.manifest["pages"][0]["fetch"]["snapshot"]["notModified"] is True
    assert files(tmp_path, page_id("s", url)) == [stored]
    assert stored.read_bytes() == before  # not rewritten with the flags


@pytest_twisted.ensureDeferred
async def test_off_by_default(server, crawl):
    resource = Resource("<p>hello</p>", etag='"v1"')
    server.routes["/page.html"] = resource
    await crawl(settings={"TRAVERSE_MAX_DEPTH": 0}, url=server.url("/page.html"))
    second = await crawl(settings={"TRAVERSE_MAX_DEPTH": 0}, url=server.url("/page.html"))
    assert resource.seen == [{}, {}]
    assert "notModified" not in second.manifest["pages"][0]["fetch"]["snapshot"]
