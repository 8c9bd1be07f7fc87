"""``scrapy snapshots ID`` and ``scrapy snapshot REF``, run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest_twisted

from tests.support.cli import REPO, scrapy
from tests.support.server import Reply
from traverse_crawl.fetch.urls import page_id

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
HOME = '<a href="img.png">png</a> <p>caf\u00e9</p>'


def store_args(tmp_path: Path) -> list[str]:
    return ["-s", f"TRAVERSE_STORE={tmp_path / 'store'}"]


def one_error_line(run: Any) -> str:
    assert run.returncode == 1, (run.returncode, run.stderr)
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: ")
    return str(lines[0])


async def capture_twice(server: Any, crawl: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two captures of the same seed; the home page changes in between."""
    server.site(
        {
            "/home.html": HOME,
            "/img.png": Reply(body=PNG, content_type="image/png"),
        }
    )
    first = (await crawl(url=server.url("/home.html"), source_id="s")).manifest
    server.site({"/home.html": HOME + "<p>v2</p>"})
    second = (await crawl(url=server.url("/home.html"), source_id="s")).manifest
    return first, second


@pytest_twisted.ensureDeferred
async def test_snapshots_lists_a_page_and_a_seed(server, crawl, tmp_path):
    first, second = await capture_twice(server, crawl)
    home = server.url("/home.html")

    run = scrapy("snapshots", page_id("s", home), *store_args(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    newest, oldest = (m["pages"][0]["fetch"]["snapshot"] for m in (second, first))
    assert lines == [
        f"{s['fetchedAt']}  200  html  {s['bodyHash'][:12]}  {home}" for s in (newest, oldest)
    ]

    run = scrapy("snapshots", "s", *store_args(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 4  # two pages, captured twice each
    columns = [line.split("  ") for line in lines]
    assert sorted((c[1], c[2], c[4]) for c in columns) == [
        ("200", "html", home), ("200", "html", home),
        ("200", "png", server.url("/img.png")), ("200", "png", server.url("/img.png")),
    ]  # fmt: skip
    times = [line.split("  ")[0] for line in lines]
    assert times == sorted(times, reverse=True)

    run = scrapy("snapshots", "s", "--json", *store_args(tmp_path))
    assert run.returncode == 0, run.stderr
    records = [json.loads(line) for line in run.stdout.splitlines()]
    refs = {p["sourceRef"] for m in (first, second) for p in m["pages"]}
    assert {r["sourceRef"] for r in records} == refs
    assert all("body" not in r and "bodyBytes" not in r for r in records)


@pytest_twisted.ensureDeferred
async def test_snapshot_writes_body_and_metadata(server, crawl, tmp_path):
    first, second = await capture_twice(server, crawl)
    png_page = next(p for p in first["pages"] if p["url"].endswith(".png"))
    out = tmp_path / "out.png"

    run = scrapy("snapshot", png_page["sourceRef"], "-o", str(out), *store_args(tmp_path))
    assert run.returncode == 0, run.stderr
    assert out.read_bytes() == PNG
    meta = json.loads(run.stderr)
    assert meta == {**png_page["fetch"]["snapshot"], "sourceRef": png_page["sourceRef"]}

    # An older capture of a page that changed since: the ref names that one.
    old_home = first["pages"][0]
    run = scrapy("snapshot", old_home["sourceRef"], *store_args(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout == HOME
    assert json.loads(run.stderr)["fetchedAt"] == old_home["fetch"]["snapshot"]["fetchedAt"]

    body, meta_file = tmp_path / "home.html", tmp_path / "home.json"
    new_home = second["pages"][0]
    run = scrapy(
        "snapshot", new_home["sourceRef"], "-o", str(body), "--meta", str(meta_file),
        *store_args(tmp_path),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout == "" and run.stderr == ""
    assert body.read_text(encoding="utf-8") == HOME + "<p>v2</p>"
    assert (
        json.loads(meta_file.read_text())["bodyHash"] == new_home["fetch"]["snapshot"]["bodyHash"]
    )


@pytest_twisted.ensureDeferred
async def test_clear_errors(server, crawl, tmp_path):
    first, _ = await capture_twice(server, crawl)
    ref = first["pages"][0]["sourceRef"]

    line = one_error_line(scrapy("snapshots", "nobody", *store_args(tmp_path)))
    assert '"nobody"' in line
    line = one_error_line(
        scrapy("snapshot", "traverse-snapshot:%E0%A4%A?url=u", *store_args(tmp_path))
    )
    assert "not a traverse-snapshot sourceRef" in line
    one_error_line(scrapy("snapshot", "https://example.test/", *store_args(tmp_path)))
    other = ref.replace("sha256=", "sha256=0", 1)
    line = one_error_line(scrapy("snapshot", other, *store_args(tmp_path)))
    assert "no snapshot stored" in line
    for command, arg in (("snapshots", "s"), ("snapshot", ref)):
        line = one_error_line(scrapy(command, arg, "-s", f"TRAVERSE_STORE={tmp_path / 'nowhere'}"))
        assert "no snapshot store at" in line and "TRAVERSE_STORE" in line
    usage = scrapy("snapshot", *store_args(tmp_path))
    assert usage.returncode == 2 and "sourceRef" in usage.stderr


def test_store_setting_comes_from_the_project(tmp_path):
    # Without -s the project's TRAVERSE_STORE (relative to the project dir) is read.
    run = scrapy("snapshots", "no-such-seed-anywhere")
    assert run.returncode == 1
    assert str(REPO / ".traverse" / "snapshots") in run.stderr
