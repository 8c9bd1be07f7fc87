"""``TraverseSpider.parse_page``: a subclass's own items and requests, the manifest unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
import scrapy

from tests.support.server import Reply, Server
from traverse_crawl import TraverseSpider


class Titles(TraverseSpider):
    """A sync hook: one item per HTML page, and a request out of the BFS from the seed."""

    name = "titles"

    def parse_page(self, response: Any, page: dict[str, Any]) -> Any:
        yield {"title": response.css("title::text").get(), "url": page["url"]}
        if page["depth"] == 0:
            yield scrapy.Request(response.urljoin("/feed.txt"), callback=self.parse_feed)

    def parse_feed(self, response: Any) -> Any:
        yield {"feed": response.text}


class AsyncTitles(TraverseSpider):
    """An async hook, which changes the page copy it is given."""

    name = "asynctitles"

    async def parse_page(self, response: Any, page: dict[str, Any]) -> Any:
        page["fetch"] = "changed"  # a copy: the page's item and manifest keep theirs
        yield {"title": response.css("title::text").get(), "url": page["url"]}


def site(server: Server) -> None:
    server.site(
        {
            "/": "<title>Home</title><a href='/a.html'>a</a><a href='/gone.html'>gone</a>",
            "/a.html": "<title>A</title>",
            "/feed.txt": Reply(body="one line", content_type="text/plain"),
        }
    )


def manifest_bytes(directory: Path) -> bytes:
    (path,) = directory.glob("*.json")
    return path.read_bytes()


@pytest_twisted.ensureDeferred
async def test_a_subclass_yields_its_items_for_each_page_with_a_snapshot(server, crawl, tmp_path):
    site(server)
    seed = server.url("/")
    result = await crawl(spidercls=Titles, url=seed, source_id="s")
    pages = {i["url"]: i for i in result.items if "fetch" in i}
    assert "error" in pages[server.url("/gone.html")]["fetch"]  # no snapshot: no call
    titles = sorted((i["url"], i["title"], i["sourceRef"]) for i in result.items if "title" in i)
    assert titles == [
        (seed, "Home", pages[seed]["sourceRef"]),
        (server.url("/a.html"), "A", pages[server.url("/a.html")]["sourceRef"]),
    ]
    (feed,) = [i for i in result.items if "feed" in i]
    assert feed["feed"] == "one line" and feed["sourceRef"].startswith(
        "traverse-snapshot:titles%3A%3Ahttp"
    )
    assert server.count("/feed.txt") == 1
    bfs = [seed, server.url("/a.html"), server.url("/gone.html")]
    assert [p["url"] for p in result.manifest["pages"]] == bfs

    # Replayed from that store, the subclass and the plain spider write the same bytes.
    server.shutdown()
    server.server_close()
    replay = {"TRAVERSE_MODE": "replay"}
    plain = await crawl(
        settings={**replay, "TRAVERSE_MANIFEST_DIR": str(tmp_path / "plain")},
        url=seed,
        source_id="s",
    )
    again = await crawl(
        settings={**replay, "TRAVERSE_MANIFEST_DIR": str(tmp_path / "sub")},
        spidercls=Titles,
        url=seed,
        source_id="s",
    )
    assert manifest_bytes(tmp_path / "sub") == manifest_bytes(tmp_path / "plain")
    assert sorted((i["url"], i["title"], i["sourceRef"]) for i in again.items if "title" in i) == (
        titles
    )
    assert [i["feed"] for i in again.items if "feed" in i] == ["one line"]
    assert [i for i in plain.items if "title" in i or "feed" in i] == []


@pytest.mark.parametrize("mode", ["live", "capture"])
@pytest_twisted.ensureDeferred
async def test_an_async_hook_gets_a_copy_of_each_page(server, crawl, tmp_path, mode):
    site(server)
    seed = server.url("/")
    result = await crawl(settings={"TRAVERSE_MODE": mode}, spidercls=AsyncTitles, url=seed)
    pages = {i["url"]: i for i in result.items if "fetch" in i}
    assert all(isinstance(p["fetch"], dict) for p in pages.values())
    assert all(isinstance(p["fetch"], dict) for p in result.manifest["pages"])
    titles = {i["url"]: i for i in result.items if "title" in i}
    assert sorted(titles) == [seed, server.url("/a.html")]
    for url, item in titles.items():
        assert item["sourceRef"] == pages[url]["sourceRef"]


class NoCallback(TraverseSpider):
    name = "nocallback"

    def parse_page(self, response: Any, page: dict[str, Any]) -> Any:
        yield scrapy.Request(response.urljoin("/feed.txt"))  # parse would get it


@pytest_twisted.ensureDeferred
async def test_a_request_without_a_callback_is_dropped_with_one_warning(
    server, crawl, tmp_path, caplog
):
    site(server)
    result = await crawl(spidercls=NoCallback, url=server.url("/"))
    assert result.stats["frontier/no_callback"] == 2  # one per page with a snapshot
    assert caplog.text.count("names no callback") == 1
    assert [p["url"] for p in result.manifest["pages"]] == [
        server.url("/"),
        server.url("/a.html"),
        server.url("/gone.html"),
    ]
