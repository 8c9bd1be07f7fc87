"""A user's own Scrapy project with the add-on: a plain spider and a traverse subclass.

The project is built in the test's directory from nothing but what
``scrapy startproject`` writes (``scrapy.cfg``, a settings module with
``BOT_NAME``, ``SPIDER_MODULES`` and ``ADDONS``) plus its spiders; traverse_crawl
is found through ``PYTHONPATH``. Every crawl is a ``scrapy crawl`` subprocess
against servers on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.cli import crawl_args, scrapy, scrapy_env
from tests.support.server import Handler, Hit, Reply, Server
from traverse_crawl import FilesystemSnapshotStore, parse_source_ref

ADDON = "traverse_crawl.Addon"

SETTINGS = f"""\
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
NEWSPIDER_MODULE = "shop.spiders"
ADDONS = {{"{ADDON}": 100}}
"""

PLAIN_SPIDER = """\
import attrs
import scrapy


class Declared(scrapy.Item):
    url = scrapy.Field()
    sourceRef = scrapy.Field()


class Undeclared(scrapy.Item):
    url = scrapy.Field()


@attrs.define
class Offer:
    url: str
    sourceRef: str | None = None


class PlainSpider(scrapy.Spider):
    name = "plain"

    def __init__(self, base, other, closed, extra="", **kwargs):
        super().__init__(**kwargs)
        self.base, self.other, self.closed, self.extra = base, other, closed, extra

    async def start(self):
        paths = [
            "/", "/private/stock.html", "/flaky.html", "/old.html", "/frag.html#part",
            "/missing.html",
        ]
        if self.extra:
            paths.append(self.extra)
        urls = [self.base + path for path in paths] + [self.other + "/", self.closed + "/"]
        for url in urls:
            yield scrapy.Request(
                url, callback=self.parse, errback=self.failed, cb_kwargs={"requested": url}
            )
        slow = self.base + "/slow.html"
        yield scrapy.Request(
            slow, callback=self.parse, errback=self.failed, cb_kwargs={"requested": slow},
            meta={"download_timeout": 0.3, "dont_retry": True},
        )

    def parse(self, response, requested):
        yield {
            "kind": "page",
            "requested": requested,
            "url": response.url,
            "text": response.text,
            "class": type(response).__name__,
            "ref": response.meta.get("traverse_source_ref"),
        }
        yield Declared(url=response.url)
        yield Undeclared(url=response.url)
        yield Offer(url=response.url)

    def failed(self, failure):
        error = failure.value.error
        yield {
            "kind": "failure",
            "requested": failure.request.cb_kwargs["requested"],
            "error": error.kind,
            "message": error.message,
            "status": error.status,
            "exception": type(failure.value).__name__,
        }
"""

TRAVERSE_SUBCLASS = """\
import scrapy

from traverse_crawl import TraverseSpider


class Title(scrapy.Item):
    url = scrapy.Field()
    title = scrapy.Field()
    sourceRef = scrapy.Field()


class ShopTraverse(TraverseSpider):
    name = "shoptraverse"

    def parse_page(self, response, page):
        if page["fetch"]["snapshot"]["contentType"] == "html":
            yield Title(url=page["url"], title=response.css("title::text").get())
        if page["depth"] == 0:
            yield scrapy.Request(
                response.urljoin("/extra.html"), callback=self.parse_extra, errback=self.failed
            )

    def parse_extra(self, response):
        yield {"extra": response.url, "text": response.text}

    def failed(self, failure):
        yield {"extra_failed": failure.request.url, "error": failure.value.error.kind}
"""


def make_project(root: Path, spiders: dict[str, str]) -> Path:
    """``scrapy startproject shop``'s files, and ``spiders`` in shop/spiders/."""
    project = root / "project"
    package = project / "shop"
    (package / "spiders").mkdir(parents=True)
    (project / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n")
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text(SETTINGS)
    (package / "spiders" / "__init__.py").write_text("")
    for name, source in spiders.items():
        (package / "spiders" / f"{name}.py").write_text(textwrap.dedent(source))
    return project


def user_scrapy(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``scrapy ARGS`` in the user's project, traverse_crawl on PYTHONPATH."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args],
        cwd=project,
        env=scrapy_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


ROBOTS = "User-agent: *\nDisallow: /private/\n"


def shop_site(server: Server) -> None:
    attempts = {"flaky": 0}

    def flaky(_: Handler) -> Reply:
        attempts["flaky"] += 1
        if attempts["flaky"] == 1:
            return Reply(503, "busy", content_type="text/plain")
        return Reply(body="<title>Flaky</title><p>up again</p>")

    server.site(
        {
            "/robots.txt": Reply(body=ROBOTS, content_type="text/plain"),
            "/": "<title>Home</title><a href='/a.html'>a</a><a href='/b.html'>b</a>",
            "/a.html": "<title>A</title><p>page a</p>",
            "/b.html": "<title>B</title><p>page b</p>",
            "/private/stock.html": "<p>never fetched</p>",
            "/old.html": Reply(301, headers={"Location": "/new.html"}),
            "/new.html": "<title>New</title><p>moved here</p>",
            "/frag.html": "<title>Frag</title><p>fragment</p>",
            "/extra.html": "<title>Extra</title><p>not in the BFS</p>",
            "/slow.html": Reply(body="<p>too late</p>", delay=1.5),
        }
    )
    server.routes["/flaky.html"] = flaky


def closed_origin() -> str:
    """A loopback origin where nothing listens (the port was just free)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_plain_spider_is_fetched_politely_captured_and_replayed(
    server: Server, server2: Server, tmp_path: Path
) -> None:
    shop_site(server)
    server2.site({"/": "<p>another origin</p>"})
    project = make_project(tmp_path, {"plain": PLAIN_SPIDER})
    store = tmp_path / "store"
    closed = closed_origin()
    spider_args = [
        "-a", f"base={server.origin}", "-a", f"other={server2.origin}", "-a", f"closed={closed}",
    ]  # fmt: skip
    common = [
        *crawl_args(tmp_path, server.origin, closed),  # server2 is not allowed: egress-denied
        "-s", "TRAVERSE_MIN_DELAY=0.2",
        "-s", "TRAVERSE_RETRY_BACKOFF=0.01",
    ]  # fmt: skip

    done = user_scrapy(project, "crawl", "plain", *spider_args, *common, "-O", "capture.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    captured = read_jsonl(project / "capture.jsonl")
    pages = {i["requested"]: i for i in captured if i.get("kind") == "page"}
    failures = {i["requested"]: i for i in captured if i.get("kind") == "failure"}

    # robots.txt honoured: the disallowed page fails typed, and never reached the server.
    denied = failures[server.url("/private/stock.html")]
    assert denied["error"] == "robots-denied"
    assert "/private/stock.html" not in server.paths()
    # The egress guard: a loopback origin that is not allowed.
    assert failures[server2.url("/")]["error"] == "egress-denied"
    assert server2.paths() == []
    # Every failure is typed, and the errback still gets the exception Scrapy raised.
    refused = failures[closed + "/"]
    assert (refused["error"], refused["exception"]) == ("network", "DownloadConnectionRefusedError")
    assert "the connection was refused" in refused["message"]
    missing = failures[server.url("/missing.html")]
    assert (missing["error"], missing["status"], missing["exception"]) == (
        "http-error",
        404,
        "HttpError",
    )
    slow = failures[server.url("/slow.html")]
    assert (slow["error"], slow["exception"]) == ("timeout", "DownloadTimeoutError")
    assert slow["message"].endswith("timed out after 300ms")
    # A retry after the 503, and the redirect followed.
    assert server.count("/flaky.html") == 2
    assert "up again" in pages[server.url("/flaky.html")]["text"]
    assert pages[server.url("/old.html")]["url"] == server.url("/new.html")

    # The delay: from the end of one request to the start of the next, per origin
    # (the retry waits its backoff instead). The slow page's request ended for the
    # crawl when it timed out, 300 ms after it started; the server's thread sleeps on
    # and logs a later end (or none, if the crawl is over first).
    def ended(hit: Hit) -> float:
        return hit.start + 0.3 if hit.path == "/slow.html" else hit.end

    hits = sorted((h for h in server.hits if h.path != "/robots.txt"), key=lambda h: h.start)
    for before, after in itertools.pairwise(hits):
        if after.path != "/flaky.html":
            assert after.start - ended(before) >= 0.18, (before.path, after.path)

    # Capture: each response's snapshot, readable by the store API, under its page id.
    snapshots = FilesystemSnapshotStore(str(store))
    for requested, page in pages.items():
        assert page["class"] == "HtmlResponse"
        page_id = "plain::" + requested.split("#", 1)[0]
        stored = snapshots.latest(page_id)
        assert stored is not None, page_id
        assert stored["body"] == page["text"] and stored["url"] == page["url"]
        ref = parse_source_ref(page["ref"])
        assert ref is not None and ref.source_id == page_id
        assert snapshots.get_by_source_ref(page["ref"]) == stored

    # sourceRef on a dict, a scrapy.Item with the field and an attrs item; one
    # warning for the scrapy.Item class without it, however many it yielded.
    refs = {page["url"]: page["ref"] for page in pages.values()}
    items = [i for i in captured if "kind" not in i]
    assert len(items) == 3 * len(pages)
    for item in items:
        if "sourceRef" in item:
            assert item["sourceRef"] == refs[item["url"]]
    assert sum("sourceRef" in i for i in items) == 2 * len(pages)
    assert done.stderr.count("cannot take the field 'sourceRef'") == 1
    assert "shop.spiders.plain.Undeclared" in done.stderr
    assert not (tmp_path / "manifests").exists()  # no seeds, no manifest

    # Replay, the server stopped: the same bodies, no network; a page never
    # captured fails with no-snapshot.
    server.shutdown()
    server.server_close()
    done = user_scrapy(
        project, "crawl", "plain", *spider_args, "-a", "extra=/never.html", *common,
        "-s", "TRAVERSE_MODE=replay", "-O", "replay.jsonl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    replayed = read_jsonl(project / "replay.jsonl")
    again = {i["requested"]: i for i in replayed if i.get("kind") == "page"}
    assert again == pages
    missing = [i for i in replayed if i.get("requested") == server.url("/never.html")]
    assert [(i["error"], i["exception"]) for i in missing] == [("no-snapshot", "PageFailed")]
    assert sorted_items(i for i in replayed if "kind" not in i) == sorted_items(items)


def sorted_items(items: Any) -> list[str]:
    return sorted(json.dumps(item, sort_keys=True) for item in items)


def manifest_bytes(directory: Path) -> bytes:
    (path,) = directory.glob("*.json")
    return path.read_bytes()


def without_times(manifest: bytes) -> dict[str, Any]:
    """A manifest with what differs between two captures (fetch times) taken out."""
    data = json.loads(manifest)
    for page in data["pages"]:
        page.pop("sourceRef", None)
        page["fetch"].get("snapshot", {}).pop("fetchedAt", None)
    return data


def test_a_traverse_subclass_yields_its_items_and_keeps_the_manifest(
    server: Server, tmp_path: Path
) -> None:
    shop_site(server)
    project = make_project(tmp_path, {"shoptraverse": TRAVERSE_SUBCLASS})
    seed = ["-a", f"url={server.url('/')}", "-a", "source_id=shop"]

    def settings(store: str, manifests: str, mode: str = "capture") -> list[str]:
        return [
            "-s", f"TRAVERSE_STORE={tmp_path / store}",
            "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / manifests}",
            "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}",
            "-s", "TRAVERSE_MIN_DELAY=0",
            "-s", f"TRAVERSE_MODE={mode}",
        ]  # fmt: skip

    plain = scrapy("crawl", "traverse", *seed, *settings("plain-store", "plain"))
    assert plain.returncode == 0, plain.stderr[-3000:]
    sub = user_scrapy(
        project, "crawl", "shoptraverse", *seed, *settings("store", "sub"), "-O", "sub.jsonl"
    )
    assert sub.returncode == 0, sub.stderr[-3000:]
    # Captured apart, the two manifests differ only in their fetch times.
    assert without_times(manifest_bytes(tmp_path / "sub")) == without_times(
        manifest_bytes(tmp_path / "plain")
    )
    items = read_jsonl(project / "sub.jsonl")
    pages = {i["url"]: i for i in items if "fetch" in i}
    titles = [i for i in items if "title" in i]
    assert sorted(t["title"] for t in titles) == ["A", "B", "Home"]
    assert all(t["sourceRef"] == pages[t["url"]]["sourceRef"] for t in titles)
    (extra,) = [i for i in items if "extra" in i]
    assert extra["extra"] == server.url("/extra.html") and "not in the BFS" in extra["text"]
    assert server.count("/extra.html") == 1
    extra_id = "shoptraverse::" + server.url("/extra.html")
    assert FilesystemSnapshotStore(str(tmp_path / "store")).latest(extra_id) is not None

    # Replayed from the subclass's store by both spiders: the same manifest, byte for byte.
    server.shutdown()
    server.server_close()
    plain = scrapy("crawl", "traverse", *seed, *settings("store", "plain-replay", "replay"))
    assert plain.returncode == 0, plain.stderr[-3000:]
    sub = user_scrapy(
        project, "crawl", "shoptraverse", *seed, *settings("store", "sub-replay", "replay"),
        "-O", "replay.jsonl",
    )  # fmt: skip
    assert sub.returncode == 0, sub.stderr[-3000:]
    assert manifest_bytes(tmp_path / "sub-replay") == manifest_bytes(tmp_path / "plain-replay")
    replayed = read_jsonl(project / "replay.jsonl")
    assert sorted_items(i for i in replayed if "title" in i) == sorted_items(titles)
    assert [i for i in replayed if "extra" in i] == [extra]
