"""``TRAVERSE_POLICY=web``: the preset of crawl-policy defaults, each still overridable,
through ``scrapy crawl`` at a loopback site (docs/crawling-real-sites.md, "Policies")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

NOARCHIVE = (
    '<html><head><meta name="robots" content="noarchive"></head><body>kept out</body></html>'
)


def site(server: Server) -> None:
    """A page with a tracking-parameter variant of a link, a calendar-like trap (a path
    segment repeated), and a page that asks not to be archived."""
    server.site(
        {
            "/": '<a href="/a">a</a> <a href="/a?utm_source=news">a again</a>'
            ' <a href="/x/x/x/x/y">trap</a> <a href="/private">private</a>',
            "/a": "<p>a</p>",
            "/x/x/x/x/y": "<p>deep</p>",
            "/private": Reply(body=NOARCHIVE),
        }
    )


def crawl(tmp: Path, server: Server, *extra: str) -> Any:
    return scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=site",
        *crawl_args(tmp, server.origin), "-s", "TRAVERSE_SKIPPED=True", *extra,
    )  # fmt: skip


def outcome(tmp: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    base = tmp / "manifests" / source_dir_name("site")
    found = json.loads(Path(f"{base}.json").read_text(encoding="utf-8"))
    skipped = [json.loads(line) for line in Path(f"{base}.skipped.jsonl").read_text().splitlines()]
    return found, skipped


def test_the_web_policy_guards_traps_drops_tracking_variants_and_obeys_meta_robots(
    server, tmp_path
):
    site(server)
    run = crawl(tmp_path, server, "-s", "TRAVERSE_POLICY=web")
    assert run.returncode == 0, run.stderr[-3000:]
    found, skipped = outcome(tmp_path)
    pages = {page["url"]: page for page in found["pages"]}
    assert sorted(pages) == [server.url(p) for p in ("/", "/a", "/private")]
    assert pages[server.url("/private")]["fetch"]["error"]["kind"] == "noarchive"
    assert [(s["url"], s["reason"], s.get("rule")) for s in skipped] == [
        (server.url("/x/x/x/x/y"), "trap", "repeated-segment")
    ]  # the utm_ variant is a duplicate of /a, not a skipped line
    assert "/a?utm_source=news" not in server.paths()


def test_a_setting_the_user_sets_wins_over_the_preset(server, tmp_path):
    site(server)
    run = crawl(
        tmp_path, server, "-s", "TRAVERSE_POLICY=web",
        "-s", "TRAVERSE_ROBOTS_META=ignore", "-s", "TRAVERSE_SEEN_KEY=verbatim",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found, skipped = outcome(tmp_path)
    pages = {page["url"]: page for page in found["pages"]}
    assert server.url("/a?utm_source=news") in pages
    assert "sourceRef" in pages[server.url("/private")]  # captured: meta robots ignored
    assert [s["reason"] for s in skipped] == ["trap"]  # the guards stay on


def test_the_default_policy_is_traverses(server, tmp_path):
    site(server)
    run = crawl(tmp_path, server)
    assert run.returncode == 0, run.stderr[-3000:]
    found, skipped = outcome(tmp_path)
    assert len(found["pages"]) == 5 and skipped == []


def test_an_unknown_policy_exits_2_naming_the_setting(server, tmp_path):
    site(server)
    run = crawl(tmp_path, server, "-s", "TRAVERSE_POLICY=wild")
    assert run.returncode == 2
    assert "TRAVERSE_POLICY" in run.stderr and "'wild'" in run.stderr
    assert "Traceback" not in run.stderr
    assert server.hits == []
