"""A loopback site of 321 pages and ``scrapy crawl`` runs with a JOBDIR, for the resume tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.cli import REPO, scrapy_env
from tests.support.server import Reply, Server
from traverse_crawl.snapshots.store import deserialize

SECTIONS = 20
PER_SECTION = 15
PAGES = 1 + SECTIONS + SECTIONS * PER_SECTION  # home, sections, leaves: 321
DELAY = 0.005  # seconds before each response


ORPHANS = 25  # pages only the sitemap lists (with ``sitemap=True``)


def long_site(
    server: Server, sitemap: bool = False, sections: int = SECTIONS, per_section: int = PER_SECTION
) -> None:
    """A BFS tree with cross links (duplicates the frontier must drop) at depths 0-3;
    with ``sitemap``, robots.txt names a sitemap of orphan pages."""
    pages: dict[str, str | Reply] = {}
    if sitemap:
        locs = "".join(f"<url><loc>{server.url(f'/orphan{i}')}</loc></url>" for i in range(ORPHANS))
        xml = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{locs}</urlset>'
        pages["/sitemap.xml"] = Reply(body=xml, content_type="application/xml")
        robots = f"User-agent: *\nAllow: /\nSitemap: {server.url('/sitemap.xml')}\n"
        pages["/robots.txt"] = Reply(body=robots, content_type="text/plain", delay=0.3)
        pages.update(
            {f"/orphan{i}": Reply(body=f"orphan {i}", delay=DELAY) for i in range(ORPHANS)}
        )
    home = "".join(f'<a href="/s{s}/">section {s}</a>' for s in range(sections))
    pages["/"] = Reply(body=home, delay=DELAY)
    for s in range(sections):
        links = "".join(f'<a href="/s{s}/p{p}">p{p}</a>' for p in range(per_section))
        pages[f"/s{s}/"] = Reply(body=f'{links}<a href="/">home</a>', delay=DELAY)
        for p in range(per_section):
            body = (
                f"<h1>{s}/{p}</h1>"
                f'<a href="/s{s}/p{(p + 1) % per_section}">next</a>'
                f'<a href="/s{(s + 1) % sections}/">next section</a>'
                f'<a href="/deep/{s}/{p}">deeper</a>'
            )
            pages[f"/s{s}/p{p}"] = Reply(body=body, delay=DELAY)
            pages[f"/deep/{s}/{p}"] = Reply(body="<p>the end</p>", delay=DELAY)
    server.site(pages)


def crawl_command(server: Server, tmp: Path, *extra: str, seed: bool = True) -> list[str]:
    return [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        *(("-a", f"url={server.url('/')}", "-a", "source_id=long") if seed else ()),
        "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}",
        "-s", "TRAVERSE_MIN_DELAY=0",
        "-s", f"TRAVERSE_MAX_PAGES={PAGES}",
        "-s", "TRAVERSE_MAX_DEPTH=2",
        "-s", f"TRAVERSE_STORE={tmp / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp / 'manifests'}",
        "-s", "CONCURRENT_REQUESTS=8",
        "-s", "LOGSTATS_INTERVAL=0",
        *extra,
    ]  # fmt: skip


def start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command,
        cwd=REPO,
        env=scrapy_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_pages(server: Server, proc: subprocess.Popen[str], count: int) -> None:
    """Until the server has answered ``count`` page requests (or the crawl ended)."""
    deadline = time.monotonic() + 60
    while len(page_hits(server)) < count and proc.poll() is None:
        assert time.monotonic() < deadline, "the crawl never got going"
        time.sleep(0.002)


def stop(proc: subprocess.Popen[str], how: int) -> None:
    """Send ``how`` (SIGINT, SIGKILL) and reap the process, whatever happens."""
    try:
        if proc.poll() is None:
            proc.send_signal(how)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def run(command: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=timeout
    )


def manifest(tmp: Path) -> dict[str, Any]:
    (path,) = (tmp / "manifests").glob("*.json")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def comparable(found: dict[str, Any]) -> dict[str, Any]:
    """A manifest without what differs between two runs of one crawl (fetch times)."""
    pages = []
    for page in found["pages"]:
        fetch = page["fetch"]
        outcome = (
            ("snapshot", fetch["snapshot"]["status"], fetch["snapshot"]["bodyHash"])
            if "snapshot" in fetch
            else ("error", fetch["error"]["kind"])
        )
        pages.append((page["id"], page["url"], page["depth"], outcome, fetch.get("warnings")))
    return {
        "seed": found["seed"],
        "mode": found["mode"],
        "pages": pages,
        "warnings": found["warnings"],
        "truncated": found["truncated"],
    }


def page_hits(server: Server) -> list[str]:
    return [path for path in server.paths() if path not in ("/robots.txt", "/sitemap.xml")]


def check_store(store: Path) -> int:
    """Every snapshot file parses; returns how many there are."""
    files = list(store.rglob("*.json"))
    for path in files:
        assert deserialize(path.read_text(encoding="utf-8")) is not None, f"{path} is torn"
    return len(files)
