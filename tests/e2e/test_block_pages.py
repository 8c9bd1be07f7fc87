"""Block pages through ``scrapy crawl``: a challenge page is recorded ``blocked`` and
leaves nothing in the store, the WARC files or the items; ``TRAVERSE_BLOCK_STOP_AFTER``
gives an origin up without further requests (the server's log proves it); bad values
exit 2 before any request (docs/crawling-real-sites.md, "Sites that push back")."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import source_dir_name

RULES = """
[[types]]
name = "page"
[types.fields]
title = "css:title::text"
"""
PATTERN = "MARK-CHALLENGE-[0-9]+"


def page(marker: str, *hrefs: str) -> str:
    anchors = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    return f"<html><head><title>{marker}</title></head><body>{anchors}</body></html>"


def crawl(tmp: Path, seeds: str, *origins: str, extra: tuple[str, ...] = ()) -> Any:
    (tmp / "extract.toml").write_text(RULES, encoding="utf-8")
    return scrapy(
        "crawl", "traverse", "-a", seeds, *crawl_args(tmp, *origins),
        "-s", f"TRAVERSE_WARC_DIR={tmp / 'warc'}",
        "-s", f"TRAVERSE_EXTRACT={tmp / 'extract.toml'}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp / 'items'}",
        "-s", f"TRAVERSE_BLOCK_PATTERNS={json.dumps([PATTERN])}",
        "-s", "TRAVERSE_MAX_PAGES=40", "-s", "TRAVERSE_MIN_DELAY=0.05",
        "-O", str(tmp / "feed.jsonl"), *extra,
        timeout=120,
    )  # fmt: skip


def manifest(tmp: Path, seed: str) -> dict[str, Any]:
    name = source_dir_name(seed)
    return json.loads((tmp / "manifests" / f"{name}.json").read_text(encoding="utf-8"))


def written(directory: Path) -> bytes:
    """Every byte of every file under ``directory`` (gzip members decompressed)."""
    out = []
    for path in sorted(directory.rglob("*")) if directory.exists() else []:
        if path.is_file():
            data = path.read_bytes()
            out.append(gzip.decompress(data) if path.name.endswith(".gz") else data)
    return b"\n".join(out)


def test_a_block_page_is_recorded_blocked_and_never_captured(server: Server, tmp_path: Path):
    flaky = iter([Reply(body=page("MARK-CHALLENGE-3"))])
    server.site(
        {
            "/": page("MARK-ROOT", "/ok", "/c200", "/c403", "/gz", "/then-ok"),
            "/ok": page("MARK-OK"),
            "/c200": page("MARK-CHALLENGE-1"),
            "/c403": Reply(403, body=page("MARK-CHALLENGE-2")),
            "/gz": Reply(
                body=gzip.compress(page("MARK-CHALLENGE-4").encode()),
                headers={"Content-Encoding": "gzip"},
            ),
        }
    )
    server.routes["/then-ok"] = lambda _h: next(flaky, Reply(body=page("MARK-THEN-OK")))
    run = crawl(
        tmp_path, f"url={server.url('/')}", server.origin,
        extra=("-a", "source_id=site", "-s", "RETRY_TIMES=1", "-s", "TRAVERSE_MAX_DELAY=1"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    pages = {p["url"][len(server.origin) :]: p for p in manifest(tmp_path, "site")["pages"]}
    for path, status in (("/c200", 200), ("/c403", 403), ("/gz", 200)):
        fetch = pages[path]["fetch"]
        assert fetch["error"]["kind"] == "blocked", path
        assert fetch["error"]["status"] == status
        assert PATTERN in fetch["error"]["message"]
        assert fetch["warnings"] == [f"retry 1/1 for {server.url(path)} after a block page"]
        assert "sourceRef" not in pages[path]
        assert server.count(path) == 2  # retried within RETRY_TIMES, as a 429 is
    # A block page, then the page: the page is captured, with its retry warning.
    assert pages["/then-ok"]["fetch"]["snapshot"]["status"] == 200
    assert "sourceRef" in pages["/then-ok"] and "sourceRef" in pages["/ok"]
    # Not a byte of any block page in the store, the WARC files, the items or the feed.
    for where in ("store", "warc", "items"):
        data = written(tmp_path / where)
        assert b"MARK-OK" in data and b"MARK-THEN-OK" in data, where
        assert b"MARK-CHALLENGE" not in data, where
    feed = [json.loads(line) for line in (tmp_path / "feed.jsonl").read_text().splitlines()]
    assert not [i for i in feed if "MARK-CHALLENGE" in json.dumps(i.get("title", ""))]
    kinds = [i["fetch"]["error"]["kind"] for i in feed if "fetch" in i and "error" in i["fetch"]]
    assert kinds.count("blocked") == 3


def test_stop_after_gives_an_origin_up_and_other_origins_go_on(
    server: Server, server2: Server, tmp_path: Path
):
    blocked = [f"/b{i}" for i in range(1, 7)]
    server.site(
        {
            "/": page("MARK-ROOT", *blocked),
            "/list": page("MARK-LIST", "/c1", "/c2"),
            **{p: page(f"MARK-CHALLENGE-{p[2:]}") for p in [*blocked, "/c1", "/c2"]},
        }
    )
    server2.site({"/": page("MARK-OTHER", "/x", "/y"), "/x": page("X"), "/y": page("Y")})
    seeds = tmp_path / "seeds.txt"
    # Two seeds on the blocking origin: each one's manifest says the origin was given up.
    seeds.write_text(
        f"shop\t{server.url('/')}\nlist\t{server.url('/list')}\nother\t{server2.url('/')}\n"
    )
    run = crawl(
        tmp_path, f"seeds={seeds}", server.origin, server2.origin,
        extra=("-s", "RETRY_TIMES=0", "-s", "TRAVERSE_BLOCK_STOP_AFTER=2",
               "-s", "TRAVERSE_MAX_DELAY=1", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # The server saw two block pages in a row, then nothing more.
    sent = [p for p in server.paths() if p != "/robots.txt"]
    assert sorted(sent[:2]) == ["/", "/list"] and len(sent) == 4, sent
    pages = manifest(tmp_path, "shop")["pages"] + manifest(tmp_path, "list")["pages"]
    kinds = [p["fetch"].get("error", {}).get("kind") for p in pages]
    assert kinds == [None] + ["blocked"] * 6 + [None] + ["blocked"] * 2
    unsent = [p for p in pages if p["url"][len(server.origin) :] not in sent]
    assert len(unsent) == 6
    assert all("not requested" in p["fetch"]["error"]["message"] for p in unsent)
    assert all("status" not in p["fetch"]["error"] for p in unsent)
    warning = f"{server.origin} gave up after 2 blocked pages in a row"
    for seed in ("shop", "list"):
        said = [w for w in manifest(tmp_path, seed)["warnings"] if warning in w]
        assert len(said) == 1, (seed, manifest(tmp_path, seed)["warnings"])
    # The other origin went on.
    assert [p["fetch"]["snapshot"]["status"] for p in manifest(tmp_path, "other")["pages"]] == [
        200, 200, 200
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-s", "TRAVERSE_MAX_DELAY=-1"], "TRAVERSE_MAX_DELAY"),
        (["-s", "TRAVERSE_DELAY_FACTOR=-0.5"], "TRAVERSE_DELAY_FACTOR"),
        (["-s", "TRAVERSE_DELAY_FACTOR=fast"], "TRAVERSE_DELAY_FACTOR"),
        (["-s", 'TRAVERSE_BLOCK_PATTERNS=["(unclosed"]'], "TRAVERSE_BLOCK_PATTERNS"),
        (["-s", "TRAVERSE_BLOCK_STOP_AFTER=-1"], "TRAVERSE_BLOCK_STOP_AFTER"),
    ],
)
def test_a_bad_push_back_setting_exits_2_naming_it_before_any_request(
    server: Server, tmp_path: Path, args: list[str], named: str
) -> None:
    server.site({"/": page("MARK-ROOT")})
    done = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}",
        *crawl_args(tmp_path, server.origin), *args,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-3000:]
    assert named in done.stderr
    assert server.paths() == []
