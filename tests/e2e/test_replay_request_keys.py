"""A user's spider with the add-on: each request is replayed with the response captured for
it, told apart by method, body and content headers, and ``dont_filter`` duplicates each
with their own capture, in the order the spider asked (docs/snapshots.md, "Which snapshot
answers a request"). A capture, then its replay with the server stopped, as ``scrapy crawl``
subprocesses in a project made from nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.cli import crawl_args, scrapy_env
from tests.support.server import Handler, Reply, Server
from traverse_crawl import FilesystemSnapshotStore

SETTINGS = """\
BOT_NAME = "shop"
SPIDER_MODULES = ["shop.spiders"]
ADDONS = {"traverse_crawl.Addon": 100}
"""

SPIDER = """\
import scrapy


class KeysSpider(scrapy.Spider):
    name = "keys"

    def __init__(self, base, extra="", **kwargs):
        super().__init__(**kwargs)
        self.base, self.extra = base, extra

    def ask(self, label, path, **kwargs):
        return scrapy.Request(
            self.base + path, callback=self.parse, errback=self.failed,
            cb_kwargs={"label": label}, dont_filter=True, **kwargs,
        )

    async def start(self):
        yield self.ask("plain", "/echo")
        yield self.ask("post-first", "/echo", method="POST", body="q=first")
        yield self.ask("post-second", "/echo", method="POST", body="q=second")
        yield self.ask("delete", "/echo", method="DELETE")
        for language in ["en", "fr", "de", "it", "es"]:
            yield self.ask(f"lang-{language}", "/echo", headers={"Accept-Language": language})
        for variant in ["a", "b"]:
            yield self.ask(f"variant-{variant}", "/echo", headers={"X-Variant": variant})
        yield self.ask("json", "/echo", headers={"Accept": "application/json"})
        for n in range(1, 4):
            yield self.ask(f"dup-{n}", "/counter")
        if self.extra:
            yield self.ask("never", "/echo", method="POST", body="q=never")

    def parse(self, response, label):
        yield {"label": label, "text": response.text}

    def failed(self, failure):
        error = failure.value.error
        yield {"label": failure.request.cb_kwargs["label"], "error": error.kind,
               "message": error.message}
"""


def make_project(root: Path) -> Path:
    (root / "shop" / "spiders").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (root / "shop" / "spiders" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "spiders" / "keys.py").write_text(SPIDER, encoding="utf-8")
    return root


def echo_site(server: Server) -> None:
    hits = {"count": 0}

    def echo(handler: Handler) -> Reply:
        body = handler.request_body.decode()
        language = handler.headers.get("Accept-Language")
        accept, variant = handler.headers.get("Accept"), handler.headers.get("X-Variant")
        return Reply(body=f"<p>{handler.command} [{body}] {language} {variant} {accept}</p>")

    def counter(_handler: Handler) -> Reply:
        hits["count"] += 1
        return Reply(body=f"<p>hit {hits['count']}</p>")

    server.routes["/echo"] = echo
    server.routes["/counter"] = counter


def run(project: Path, tmp: Path, server: Server, *more: str) -> list[dict[str, Any]]:
    out = project / f"items-{len(list(project.glob('items-*')))}.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "keys", "-a", f"base={server.origin}",
         *crawl_args(tmp, server.origin), "-s", "TRAVERSE_REQUEST_KEY_HEADERS=X-Variant",
         "-s", "LOGSTATS_INTERVAL=0", "-O", str(out), *more],
        cwd=project, env=scrapy_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def by_label(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for item in items:
        assert item["label"] not in found, item
        found[item["label"]] = item
    return found


def test_each_request_is_replayed_with_the_response_captured_for_it(
    server: Server, tmp_path: Path
) -> None:
    echo_site(server)
    project = make_project(tmp_path / "project")
    captured = by_label(run(project, tmp_path, server))
    assert captured["post-first"]["text"].startswith("<p>POST [q=first] None None")
    assert captured["lang-fr"]["text"].startswith("<p>GET [] fr None")
    assert captured["variant-b"]["text"].startswith("<p>GET [] None b")
    # Fetched in whatever order the scheduler hands them out: three different bodies.
    assert sorted(captured[f"dup-{n}"]["text"] for n in (1, 2, 3)) == [
        "<p>hit 1</p>", "<p>hit 2</p>", "<p>hit 3</p>",
    ]  # fmt: skip
    refs = [captured[f"dup-{n}"]["sourceRef"] for n in (1, 2, 3)]
    assert len(set(refs)) == 3

    # The default GET keeps the page id it always had: stores written before replay alike.
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    plain = store.latest("keys::" + server.url("/echo"))
    assert plain is not None and plain["body"] == captured["plain"]["text"]

    server.shutdown()
    server.server_close()
    replayed = by_label(run(project, tmp_path, server, "-s", "TRAVERSE_MODE=replay", "-a",
                            "extra=1"))  # fmt: skip
    never = replayed.pop("never")
    assert never["error"] == "no-snapshot", never
    assert never["message"].startswith('no snapshot stored for sourceId "keys::http://')
    assert "#POST-" in never["message"]
    # Every request, its own response; every duplicate, its own capture, in order.
    assert replayed == captured
