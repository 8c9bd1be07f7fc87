"""``TRAVERSE_ROBOTS_META``: meta robots and ``X-Robots-Tag`` under ``scrapy crawl``, at a
real loopback site: nofollow, noarchive and none, the bot's own token, prefixed headers
(another bot's prefix does not apply), what a noarchive page leaves behind (nothing in the
store, the WARC files or the items), its replay, and the default that changes nothing."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.cli import crawl_args, scrapy, scrapy_env
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

UA = "TestBot/2.0 (+https://example.invalid/bot)"

RULES = """
[[types]]
name = "page"
[types.fields]
title = "css:title::text"
"""


def page(marker: str, *hrefs: str, head: str = "") -> str:
    """A page whose body holds ``marker`` (grepped for in what the crawl wrote)."""
    anchors = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    return f"<html><head><title>{marker}</title>{head}</head><body>{anchors}</body></html>"


def meta(name: str, content: str) -> str:
    return f'<meta name="{name}" content="{content}">'


# Page -> (its marker, what obey makes of it): "ok" captured, "noarchive" not captured.
SITE: dict[str, tuple[str, str]] = {
    "/": ("MARK-ROOT", "ok"),
    "/nf": ("MARK-NF", "ok"),
    "/na": ("MARK-NA", "noarchive"),
    "/none": ("MARK-NONE", "noarchive"),
    "/bot": ("MARK-BOT", "noarchive"),
    "/googlebot": ("MARK-GOOGLEBOT", "ok"),
    "/xr": ("MARK-XHDR", "noarchive"),
    "/xrbot": ("MARK-XRBOT", "noarchive"),
    "/xrother": ("MARK-XROTHER", "ok"),
    "/gz": ("MARK-GZ", "noarchive"),
    "/xrnf": ("MARK-XRNF", "ok"),
}
CHILDREN = [
    "/nf-child",
    "/na-child",
    "/none-child",
    "/xrbot-child",
    "/xrother-child",
    "/xrnf-child",
]


def robots_site(server: Server) -> None:
    server.site(
        {
            "/": page("MARK-ROOT", *[p for p in SITE if p != "/"]),
            "/nf": page("MARK-NF", "/nf-child", "mailto:me@example.com", "http://other.invalid/",
                        head=meta("robots", "nofollow")),
            "/na": page("MARK-NA", "/na-child", head=meta("ROBOTS", "NoArchive")),
            "/none": page("MARK-NONE", "/none-child", head=meta("robots", "none")),
            "/bot": page("MARK-BOT", head=meta("testbot", "noarchive")),
            "/googlebot": page("MARK-GOOGLEBOT", head=meta("googlebot", "noarchive, nofollow")),
            "/xr": Reply(body=page("MARK-XHDR"), headers={"X-Robots-Tag": "noarchive"}),
            "/xrbot": Reply(body=page("MARK-XRBOT", "/xrbot-child"),
                            headers={"X-Robots-Tag": "testBOT: nofollow, noarchive"}),
            "/xrother": Reply(body=page("MARK-XROTHER", "/xrother-child"),
                              headers={"X-Robots-Tag": "otherbot: noarchive, nofollow"}),
            "/gz": Reply(
                body=gzip.compress(page("MARK-GZ", head=meta("robots", "noarchive")).encode()),
                headers={"Content-Encoding": "gzip"},
            ),
            "/xrnf": Reply(body=page("MARK-XRNF", "/xrnf-child"),
                           headers={"X-Robots-Tag": "nofollow"}),
            **{child: page(f"MARK-CHILD{child.upper()}") for child in CHILDREN},
        }
    )  # fmt: skip


def crawl(server: Server, tmp: Path, *extra: str, mode: str = "capture") -> dict[str, Any]:
    (tmp / "extract.toml").write_text(RULES, encoding="utf-8")
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=site",
        *crawl_args(tmp, server.origin),
        "-s", "TRAVERSE_MAX_PAGES=40", "-s", "TRAVERSE_MAX_DEPTH=2",
        "-s", f"USER_AGENT={UA}", "-s", "TRAVERSE_SKIPPED=true",
        "-s", f"TRAVERSE_WARC_DIR={tmp / 'warc'}",
        "-s", f"TRAVERSE_EXTRACT={tmp / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp / 'items'}",
        "-s", f"TRAVERSE_MODE={mode}",
        "-O", str(tmp / f"feed-{mode}.jsonl"), *extra,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    name = source_dir_name("site")
    return json.loads((tmp / "manifests" / f"{name}.json").read_text(encoding="utf-8"))


def by_path(server: Server, manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["url"][len(server.origin) :]: p for p in manifest["pages"]}


def written(directory: Path) -> bytes:
    """Every byte of every file under ``directory`` (gzip members decompressed)."""
    out = []
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            out.append(gzip.decompress(data) if path.name.endswith(".gz") else data)
    return b"\n".join(out)


def warc_records(directory: Path) -> list[tuple[str, str]]:
    records = []
    for path in sorted(directory.glob("*.warc.gz")):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                records.append((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")))
    return records


def test_obeyed_meta_robots_leave_noarchive_pages_uncaptured_and_nofollow_links_unfollowed(
    server, tmp_path
):
    robots_site(server)
    manifest = crawl(server, tmp_path, "-s", "TRAVERSE_ROBOTS_META=obey")
    pages = by_path(server, manifest)

    # Outcomes: noarchive pages are recorded with the new kind and the status they got.
    for path, (_, expected) in SITE.items():
        fetch = pages[path]["fetch"]
        if expected == "ok":
            assert "snapshot" in fetch and "sourceRef" in pages[path], path
        else:
            assert fetch["error"]["kind"] == "noarchive", path
            assert fetch["error"]["status"] == 200
            assert "sourceRef" not in pages[path] and "snapshot" not in fetch
    assert pages["/na"]["fetch"]["error"]["message"] == (
        f'noarchive in <meta name="ROBOTS"> of {server.url("/na")}: the page is not archived'
    )
    message = pages["/bot"]["fetch"]["error"]["message"]
    assert message.startswith('noarchive in <meta name="testbot">')
    assert pages["/xr"]["fetch"]["error"]["message"].startswith("noarchive in X-Robots-Tag of")
    assert pages["/xrbot"]["fetch"]["error"]["message"].startswith(
        "noarchive in X-Robots-Tag (testBOT:) of"
    )
    assert pages["/none"]["fetch"]["error"]["message"].startswith('none in <meta name="robots">')

    # Links: a noarchive page's are followed; nofollow (and none) keep a page's unfollowed;
    # another bot's directives do not apply.
    assert "/na-child" in pages and "/xrother-child" in pages
    for path in ("/nf-child", "/none-child", "/xrbot-child", "/xrnf-child"):
        assert path not in pages and server.count(path) == 0, path

    # The skipped file: each link of a nofollow page, whatever else it is, reason nofollow.
    skipped = [
        json.loads(line)
        for line in (tmp_path / "manifests" / f"{source_dir_name('site')}.skipped.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    nofollow = [(s["url"], s["from"]) for s in skipped if s["reason"] == "nofollow"]
    assert nofollow == [
        (server.url("/nf-child"), server.url("/nf")),
        ("mailto:me@example.com", server.url("/nf")),
        ("http://other.invalid/", server.url("/nf")),
        (server.url("/none-child"), server.url("/none")),
        (server.url("/xrbot-child"), server.url("/xrbot")),
        (server.url("/xrnf-child"), server.url("/xrnf")),
    ]

    # Not a byte of a noarchive page in the store, the WARC files, the items or the feed.
    store = written(tmp_path / "store")
    warc = written(tmp_path / "warc")
    items = written(tmp_path / "items")
    feed = (tmp_path / "feed-capture.jsonl").read_bytes()
    for path, (marker, expected) in SITE.items():
        captured = expected == "ok"
        assert (marker.encode() in store) is captured, path
        assert (marker.encode() in items) is captured, path
        assert (marker.encode() in feed) is captured, path  # the extracted items' titles
        if path != "/gz":  # stored gzip-encoded, as received
            assert (marker.encode() in warc) is captured, path
    records = warc_records(tmp_path / "warc")
    for path, (_, expected) in SITE.items():
        kinds = {kind for kind, uri in records if uri == server.url(path)}
        if expected == "ok":
            assert {"request", "response", "metadata"} <= kinds, path
        else:
            assert not kinds & {"response", "revisit", "resource", "metadata"}, (path, kinds)
    item_urls = {json.loads(line)["url"] for line in items.decode().splitlines() if line}
    assert server.url("/xrother") in item_urls and server.url("/na") not in item_urls

    # Replay: a noarchive page has no snapshot to answer with.
    replayed = by_path(server, crawl(server, tmp_path, "-s", "TRAVERSE_ROBOTS_META=obey",
                                     mode="replay"))  # fmt: skip
    assert replayed["/na"]["fetch"]["error"]["kind"] == "no-snapshot"
    assert replayed["/xr"]["fetch"]["error"]["kind"] == "no-snapshot"
    assert "snapshot" in replayed["/xrother"]["fetch"]
    # A page only its X-Robots-Tag header marked nofollow keeps its links unfollowed in
    # replay too (the capture kept the header with the snapshot).
    assert "snapshot" in replayed["/xrnf"]["fetch"]
    assert "/xrnf-child" not in replayed


def test_by_default_meta_robots_change_nothing(server, tmp_path):
    robots_site(server)
    manifest = crawl(server, tmp_path)
    pages = by_path(server, manifest)
    assert all("snapshot" in p["fetch"] for p in pages.values())
    assert set(pages) == set(SITE) | set(CHILDREN)
    store = written(tmp_path / "store")
    assert all(marker.encode() in store for marker, _ in SITE.values())
    explicit = tmp_path / "explicit"
    explicit.mkdir()
    again = crawl(server, explicit, "-s", "TRAVERSE_ROBOTS_META=ignore")

    def shape(m: dict[str, Any]) -> list[Any]:
        return [(p["url"], p["depth"], sorted(p["fetch"])) for p in m["pages"]]

    assert shape(again) == shape(manifest)


def test_a_bad_value_exits_2_naming_the_setting(server, tmp_path):
    robots_site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}",
        *crawl_args(tmp_path, server.origin), "-s", "TRAVERSE_ROBOTS_META=maybe",
    )  # fmt: skip
    assert run.returncode == 2
    assert "TRAVERSE_ROBOTS_META" in run.stderr and "maybe" in run.stderr
    assert "Traceback" not in run.stderr
    assert server.paths() == []


SCRIPTED = """<html><head><title>{marker}</title>{head}</head><body><a href="{child}">c</a>
<script>{script}</script></body></html>"""
ADD = (
    "var m = document.createElement('meta'); m.name = 'robots'; m.content = 'noarchive';"
    "document.head.appendChild(m);"
)
REMOVE = "document.querySelector('meta[name=robots]').remove();"


@pytest.mark.browser
def test_a_rendered_page_is_judged_on_its_rendered_document(server, tmp_path: Path):
    server.site(
        {
            "/": page("MARK-ROOT", "/added", "/removed"),
            "/added": SCRIPTED.format(marker="MARK-ADDED", head="", child="/added-child",
                                      script=ADD),
            "/removed": SCRIPTED.format(marker="MARK-REMOVED", head=meta("robots", "noarchive"),
                                        child="/removed-child", script=REMOVE),
            "/added-child": page("MARK-ADDED-CHILD"),
            "/removed-child": page("MARK-REMOVED-CHILD"),
        }
    )  # fmt: skip
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=site",
        *crawl_args(tmp_path, server.origin),
        "-s", "TRAVERSE_RENDER=always", "-s", "TRAVERSE_ROBOTS_META=obey",
        "-s", f"TRAVERSE_WARC_DIR={tmp_path / 'warc'}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    manifest = json.loads(
        (tmp_path / "manifests" / f"{source_dir_name('site')}.json").read_text(encoding="utf-8")
    )
    pages = by_path(server, manifest)
    assert pages["/added"]["fetch"]["error"]["kind"] == "noarchive"
    assert pages["/added"]["fetch"]["error"]["status"] == 200
    assert pages["/removed"]["fetch"]["snapshot"]["rendered"] is True
    assert "/added-child" in pages  # noarchive alone: its links are followed
    store = written(tmp_path / "store")
    assert b"MARK-ADDED<" not in store and b"MARK-REMOVED" in store
    records = warc_records(tmp_path / "warc")
    assert not {kind for kind, uri in records if uri == server.url("/added")} & {
        "response",
        "metadata",
    }
    assert {"response", "metadata"} <= {k for k, uri in records if uri == server.url("/removed")}
    assert b"MARK-ADDED<" not in written(tmp_path / "warc")


OWN_SPIDER = """
import scrapy


class PlainSpider(scrapy.Spider):
    name = "plain"

    async def start(self):
        yield scrapy.Request(self.url)

    def parse(self, response):
        verdict = response.meta.get("traverse_robots_meta")
        yield {
            "url": response.url,
            "nofollow": bool(verdict and verdict.nofollow),
            "noarchive": bool(verdict and verdict.noarchive),
        }
        yield from response.follow_all(css="a")
"""


def test_with_the_add_on_a_spiders_noarchive_responses_are_not_captured(server, tmp_path):
    server.site(
        {
            "/": page("MARK-OWN-ROOT", "/na", "/xr"),
            "/na": page("MARK-OWN-NA", "/child", head=meta("robots", "noarchive")),
            "/xr": Reply(body=page("MARK-OWN-XR"), headers={"X-Robots-Tag": "plain: none"}),
            "/child": page("MARK-OWN-CHILD"),
        }
    )  # fmt: skip
    root = tmp_path / "project"
    (root / "shop" / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "spiders" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "spiders" / "plain.py").write_text(OWN_SPIDER, encoding="utf-8")
    (root / "shop" / "settings.py").write_text(
        'BOT_NAME = "shop"\nSPIDER_MODULES = ["shop.spiders"]\n'
        'ADDONS = {"traverse_crawl.Addon": 100}\n',
        encoding="utf-8",
    )
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "plain", "-a", f"url={server.url('/')}",
         "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
         "-s", f"TRAVERSE_WARC_DIR={tmp_path / 'warc'}",
         "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}", "-s", "TRAVERSE_MIN_DELAY=0",
         "-s", "USER_AGENT=Plain/1.0", "-s", "TRAVERSE_ROBOTS_META=obey",
         "-O", str(tmp_path / "items.jsonl")],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    items = {
        json.loads(line)["url"][len(server.origin) :]: json.loads(line)
        for line in (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()
    }
    # The spider still gets every response, with the verdict to honour nofollow itself.
    assert set(items) == {"/", "/na", "/xr", "/child"}
    assert items["/na"] == {"url": server.url("/na"), "nofollow": False, "noarchive": True}
    assert items["/xr"]["nofollow"] is True and items["/xr"]["noarchive"] is True
    # Items of a noarchive response name no snapshot; the others do.
    assert "sourceRef" not in items["/na"] and items["/child"]["sourceRef"]
    store, warc = written(tmp_path / "store"), written(tmp_path / "warc")
    for marker, captured in (("MARK-OWN-ROOT", True), ("MARK-OWN-CHILD", True),
                             ("MARK-OWN-NA", False), ("MARK-OWN-XR", False)):  # fmt: skip
        assert (marker.encode() in store) is captured, marker
        assert (marker.encode() in warc) is captured, marker
