"""``scrapy diff`` on two real loopback captures, and the cheap-recrawl recipe."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support.cli import scrapy
from tests.support.server import Handler, Reply, Server


def links(*paths: str) -> str:
    return "".join(f'<a href="{p}">{p}</a>' for p in paths)


def dirs(tmp_path: Path, name: str) -> dict[str, Any]:
    return {"TRAVERSE_MANIFEST_DIR": str(tmp_path / name)}


async def two_captures(server: Server, crawl: Any, tmp_path: Path) -> tuple[Path, Path]:
    """Between the captures: a page added, one removed, one changed, one broken, one fixed."""
    server.site(
        {
            "/": links("/same.html", "/edit.html", "/gone.html", "/break.html", "/fix.html"),
            "/same.html": "<p>same</p>",
            "/edit.html": "<p>first version</p>",
            "/gone.html": "<p>soon gone</p>",
            "/break.html": "<p>works for now</p>",
            "/fix.html": Reply(404, "missing"),
        }
    )
    await crawl(settings=dirs(tmp_path, "old"), url=server.url("/"), source_id="site")
    server.site(
        {
            "/": links("/same.html", "/edit.html", "/break.html", "/fix.html", "/new.html"),
            "/edit.html": "<p>second version</p>",
            "/break.html": Reply(404, "gone"),
            "/fix.html": "<p>fixed</p>",
            "/new.html": "<p>new</p>",
        }
    )
    await crawl(settings=dirs(tmp_path, "new"), url=server.url("/"), source_id="site")
    return tmp_path / "old", tmp_path / "new"


@pytest_twisted.ensureDeferred
async def test_diff_of_two_captures_text_json_and_exit_codes(server, crawl, tmp_path):
    old, new = await two_captures(server, crawl, tmp_path)
    u = server.url
    h_old, h_new = hashes(old), hashes(new)

    run = scrapy("diff", str(old), str(new))
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        "1 added, 1 removed, 2 changed, 1 failed, 1 recovered, 1 unchanged\n"
        "added (1):\n"
        f"  {u('/new.html')}  200 html\n"
        "removed (1):\n"
        f"  {u('/gone.html')}  200 html\n"
        "changed (2):\n"
        f"  {u('/')}  200 html, bodyHash {h_old[u('/')]} → {h_new[u('/')]}\n"
        f"  {u('/edit.html')}  200 html, bodyHash {h_old[u('/edit.html')]} → "
        f"{h_new[u('/edit.html')]}\n"
        "failed (1):\n"
        f"  {u('/break.html')}  200 html → http-error 404\n"
        "recovered (1):\n"
        f"  {u('/fix.html')}  http-error 404 → 200 html\n"
    )

    run = scrapy("diff", "--json", str(old), str(new))
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["counts"] == {
        "added": 1, "removed": 1, "changed": 2, "failed": 1, "recovered": 1, "unchanged": 1,
    }  # fmt: skip
    by_url = {p["url"]: p for p in data["pages"]}
    assert by_url[u("/same.html")]["class"] == "unchanged"
    assert by_url[u("/break.html")]["new"]["error"]["status"] == 404
    assert by_url[u("/gone.html")]["new"] is None
    assert by_url[u("/new.html")]["old"] is None
    assert by_url[u("/edit.html")]["new"]["sourceRef"].startswith("traverse-snapshot:")

    assert scrapy("diff", "--exit-code", str(old), str(new)).returncode == 1
    manifest = next(new.glob("*.json"))
    same = scrapy("diff", "--exit-code", str(new), str(manifest))  # a directory vs its file
    assert same.returncode == 0, same.stderr
    assert same.stdout.startswith("0 added, 0 removed, 0 changed, 0 failed, 0 recovered, 6 ")


def hashes(directory: Path) -> dict[str, str]:
    """URL -> the first 12 characters of its bodyHash, as the text summary shows them."""
    (manifest,) = directory.glob("*.json")
    pages = json.loads(manifest.read_text())["pages"]
    return {
        p["url"]: p["fetch"]["snapshot"]["bodyHash"][:12] for p in pages if "snapshot" in p["fetch"]
    }


@pytest_twisted.ensureDeferred
async def test_bodies_shows_a_bounded_text_diff_from_the_store(server, crawl, tmp_path):
    old, new = await two_captures(server, crawl, tmp_path)
    store = ["-s", f"TRAVERSE_STORE={tmp_path / 'store'}"]
    run = scrapy("diff", "--bodies", str(old), str(new), *store)
    assert run.returncode == 0, run.stderr
    section = run.stdout.split("changed (2):\n")[1].split("failed (1):")[0]
    assert "      -<p>first version</p>\n      +<p>second version</p>\n" in section
    run = scrapy("diff", "--bodies", "--bodies-lines", "1", str(old), str(new), *store)
    assert "      @@ -1 +1 @@\n      … 2 more diff line(s)\n" in run.stdout
    # Without the store the diff still works, and says why there are no bodies.
    run = scrapy("diff", "--bodies", str(old), str(new), "-s", f"TRAVERSE_STORE={tmp_path}/no")
    assert run.returncode == 0 and "changed (2):" in run.stdout
    assert run.stderr.startswith("warning: --bodies: no snapshot store at ")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "cannot read: No such file or directory"),
        (b"{not json", "not JSON"),
        (b'{"pages": []}', "not a traverse manifest: no seed.id"),
        (b"\xff\xfe", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "not JSON (nested deeper than"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "not JSON (nested deeper than"),
    ],
)
def test_bad_input_exits_2_naming_the_file(tmp_path, content, reason):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"seed": {"id": "s", "url": "u"}, "pages": [], "warnings": []}))
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_bytes(content)
    for args in ((str(good), str(bad)), (str(bad), str(good))):
        run = scrapy("diff", *args)
        assert run.returncode == 2, run.stderr
        assert run.stdout == ""
        assert run.stderr.startswith(f"error: {bad}: {reason}"), run.stderr
        assert len(run.stderr.splitlines()) == 1


def test_an_empty_directory_is_bad_input(tmp_path):
    (tmp_path / "empty").mkdir()
    run = scrapy("diff", str(tmp_path / "empty"), str(tmp_path / "empty"))
    assert run.returncode == 2
    assert run.stderr == f"error: {tmp_path / 'empty'}: directory holds no manifest (*.json)\n"


class Validated:
    """A page with an ETag that answers a matching If-None-Match with 304."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.statuses: list[int] = []

    def __call__(self, handler: Handler) -> Reply:
        etag = f'"{abs(hash(self.body))}"'
        status = 304 if handler.headers.get("If-None-Match") == etag else 200
        self.statuses.append(status)
        body = "" if status == 304 else self.body
        return Reply(status, body, headers={"ETag": etag}, content_type=None if status == 304
                     else "text/html; charset=utf-8")  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_cheap_recrawl_recipe_costs_304s_and_shows_unchanged(server, crawl, tmp_path):
    pages = {
        "/": Validated(links("/a.html", "/b.html")),
        "/a.html": Validated("<p>a</p>"),
        "/b.html": Validated("<p>b</p>"),
    }
    server.routes.update(pages)
    # 1. capture; 2. later, capture again revalidating against the same store.
    await crawl(settings=dirs(tmp_path, "monday"), url=server.url("/"), source_id="site")
    pages["/b.html"].body = "<p>b, edited</p>"
    await crawl(
        settings={**dirs(tmp_path, "tuesday"), "TRAVERSE_REVALIDATE": True},
        url=server.url("/"),
        source_id="site",
    )
    assert [p.statuses for p in pages.values()] == [[200, 304], [200, 304], [200, 200]]
    # 3. scrapy diff: the 304s are unchanged, the edit is changed.
    run = scrapy("diff", "--json", str(tmp_path / "monday"), str(tmp_path / "tuesday"))
    assert run.returncode == 0, run.stderr
    classes = {p["url"]: p["class"] for p in json.loads(run.stdout)["pages"]}
    assert classes == {
        server.url("/"): "unchanged",
        server.url("/a.html"): "unchanged",
        server.url("/b.html"): "changed",
    }
    text = scrapy("diff", str(tmp_path / "monday"), str(tmp_path / "tuesday")).stdout
    assert text.startswith("0 added, 0 removed, 1 changed, 0 failed, 0 recovered, 2 unchanged\n")
