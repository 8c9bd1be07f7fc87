"""Each exit status of ``scrapy crawl`` from a real case, and the stats file.

0: the crawl ran, pages failing included; 1: something could not be written for good
(the manifest directory made read-only mid-crawl, or the manifest directory or the
snapshot store replaced by a plain file mid-crawl: a disk swapped out, which stops
root's writes too); 2: a bad setting, nothing requested, for the traverse spider and
for a user's own spider in a project with the add-on. ``TRAVERSE_STATS_FILE`` has each
seed's totals as its manifest has them, also after a first SIGINT that let the crawl
finish.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_addon_project import SETTINGS, make_project
from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env, wait_for
from tests.support.server import Reply, Server


def site(server: Server) -> None:
    server.site(
        {
            "/": '<a href="/a">a</a> <a href="/gone">gone</a> <a href="/broken">b</a>',
            "/a": '<a href="/b">b</a>',
            "/b": "leaf",
            "/broken": Reply(500, "boom", content_type="text/plain"),
        }
    )


def command(server: Server, tmp: Path, *extra: str) -> list[str]:
    return [
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=exit",
        *crawl_args(tmp, server.origin), "-s", "RETRY_TIMES=0", "-s", "LOGSTATS_INTERVAL=0",
        "-s", f"TRAVERSE_STATS_FILE={tmp / 'out' / 'stats.json'}", *extra,
    ]  # fmt: skip


def popen(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "scrapy", *args], cwd=REPO, env=scrapy_env(),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def totals_of(manifest: dict[str, Any]) -> dict[str, Any]:
    kinds = Counter(p["fetch"]["error"]["kind"] if "error" in p["fetch"] else "ok"
                    for p in manifest["pages"])  # fmt: skip
    return {
        "pages": len(manifest["pages"]),
        "outcomes": dict(sorted(kinds.items())),
        "truncated": manifest["truncated"],
        "warnings": len(manifest["warnings"]),
    }


def seed_of(stats_file: dict[str, Any]) -> dict[str, Any]:
    (seed,) = stats_file["seeds"]
    return seed


def test_failing_pages_are_exit_0_and_the_stats_file_has_the_manifests_totals(server, tmp_path):
    site(server)
    run = scrapy(*command(server, tmp_path, "-O", str(tmp_path / "pages.jsonl")))
    assert run.returncode == 0, run.stderr[-2000:]
    (path,) = (tmp_path / "manifests").glob("*.json")
    manifest = read_json(path)
    found = read_json(tmp_path / "out" / "stats.json")
    seed = seed_of(found)
    assert {k: seed[k] for k in ("pages", "outcomes", "truncated", "warnings")} == totals_of(
        manifest
    )
    assert seed["outcomes"] == {"http-error": 2, "ok": 3}
    assert (seed["id"], seed["url"], seed["manifest"]) == ("exit", server.url("/"), str(path))
    assert found["lost"] == 0
    assert found["stats"]["finish_reason"] == "finished"
    assert found["stats"]["item_scraped_count"] == 5
    assert found["stats"]["start_time"].endswith("+00:00")
    assert found["items"] == [str(tmp_path / "pages.jsonl")]
    assert list((tmp_path / "out").iterdir()) == [tmp_path / "out" / "stats.json"]


def _replace_by_a_file(directory: Path):
    def handler(_request: object) -> Reply:
        if directory.is_dir():
            shutil.rmtree(directory)
            directory.write_text("a file where the directory was")  # e.g. a disk swapped out
        return Reply(body="late")

    return handler


def test_a_manifest_directory_gone_mid_crawl_is_exit_1_and_counted_as_lost(server, tmp_path):
    site(server)
    server.routes["/b"] = _replace_by_a_file(tmp_path / "manifests")
    run = scrapy(*command(server, tmp_path))
    assert run.returncode == 1, run.stderr[-2000:]
    assert "could not write manifest" in run.stderr
    found = read_json(tmp_path / "out" / "stats.json")
    assert found["lost"] == found["stats"]["traverse/lost"] == 1
    assert found["stats"]["manifest/error"] == 1
    seed = seed_of(found)
    assert seed["manifest"] is not None and "manifest-exit-" in seed["manifest"]  # the fallback
    assert totals_of(read_json(Path(seed["manifest"])))["pages"] == seed["pages"] == 5


PR_CAPBSET_DROP = 24  # linux/prctl.h
CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 1, 2  # linux/capability.h


def without_permission_override() -> None:
    """In the crawl's process before it starts, when the tests run as root: root without
    the capabilities that let it write where the mode forbids (as a service run with
    systemd's ``CapabilityBoundingSet=``), so a read-only directory is read-only to it."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_manifest_directory_made_read_only_mid_crawl_is_exit_1(server, tmp_path):
    site(server)
    manifests = tmp_path / "manifests"

    def read_only(_request: object) -> Reply:
        manifests.chmod(0o555)
        return Reply(body="late")

    server.routes["/b"] = read_only
    (tmp_path / "tmp").mkdir()
    env = {**scrapy_env(), "TMPDIR": str(tmp_path / "tmp")}  # where the fallback goes
    try:
        run = subprocess.run(
            [sys.executable, "-m", "scrapy", *command(server, tmp_path)], cwd=REPO, env=env,
            capture_output=True, text=True, timeout=60, check=False,
            preexec_fn=without_permission_override if os.geteuid() == 0 else None,
        )  # fmt: skip
    finally:
        manifests.chmod(0o755)
    assert run.returncode == 1, run.stderr[-2000:]
    assert "could not write manifest" in run.stderr and "Permission denied" in run.stderr
    assert list(manifests.iterdir()) == []
    found = read_json(tmp_path / "out" / "stats.json")
    assert found["lost"] == found["stats"]["traverse/lost"] == 1
    seed = seed_of(found)
    assert seed["manifest"].startswith(str(tmp_path / "tmp" / "manifest-exit-"))
    assert totals_of(read_json(Path(seed["manifest"])))["pages"] == seed["pages"] == 5


def test_a_snapshot_store_gone_mid_crawl_is_exit_1(server, tmp_path):
    site(server)
    server.routes["/b"] = _replace_by_a_file(tmp_path / "store")
    run = scrapy(*command(server, tmp_path))
    assert run.returncode == 1, run.stderr[-2000:]
    manifest = read_json(next((tmp_path / "manifests").glob("*.json")))
    failed = [w for w in manifest["warnings"] if "store.put failed" in w]
    assert failed
    found = read_json(tmp_path / "out" / "stats.json")
    assert found["lost"] == found["stats"]["snapshot/store_failed"] >= len(failed)


def test_an_items_feed_that_could_not_be_stored_is_exit_1(server, tmp_path):
    site(server)
    with socket.socket() as probe:  # a loopback port where no FTP server listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    feed = f"ftp://user:secret@127.0.0.1:{port}/pages.jsonl"
    run = scrapy(*command(server, tmp_path, "-o", f"{feed}:jsonlines"))
    assert run.returncode == 1, run.stderr[-2000:]
    assert "Error storing jsonlines feed" in run.stderr, run.stderr[-2000:]
    found = read_json(tmp_path / "out" / "stats.json")
    assert found["lost"] == found["stats"]["feedexport/failed_count/FTPFeedStorage"] == 1
    (manifest,) = (tmp_path / "manifests").glob("*.json")  # the crawl itself went on
    assert len(read_json(manifest)["pages"]) == 5


def test_a_bad_stats_file_setting_is_exit_2_before_any_request(server, tmp_path):
    site(server)
    (tmp_path / "out").mkdir()
    for value, line in [
        (str(tmp_path / "out"), "is a directory"),
        (f"{tmp_path / 'out'}/", "expected a file path"),
    ]:
        run = scrapy(*command(server, tmp_path), "-s", f"TRAVERSE_STATS_FILE={value}")
        assert run.returncode == 2, run.stderr[-2000:]
        errors = [x for x in run.stderr.splitlines() if "error:" in x]
        assert len(errors) == 1 and "TRAVERSE_STATS_FILE" in errors[0], run.stderr
        assert line in errors[0]
    assert server.hits == []


USER_SPIDER = """
import scrapy


class PlainSpider(scrapy.Spider):
    name = "plain"

    async def start(self):
        yield scrapy.Request(self.url)

    def parse(self, response):
        yield {"url": response.url}
"""


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("-s", "TRAVERSE_MAX_PAGES: expected a whole number >= 0, got '-1'"),
        ("settings.py", "TRAVERSE_MAX_DEPTH: expected a whole number >= 0, got 'deep'"),
        ("json", "TRAVERSE_MAX_PAGES: expected a whole number >= 0, got '-1'"),
    ],
)
def test_a_bad_setting_in_a_users_own_project_is_exit_2_naming_it(server, tmp_path, where, line):
    server.site({"/": "home"})
    root = make_project(tmp_path / "project")
    (root / "shop" / "spiders" / "plain.py").write_text(USER_SPIDER, encoding="utf-8")
    extra = ["-s", "TRAVERSE_MAX_PAGES=-1"]
    if where == "settings.py":
        settings = SETTINGS + 'TRAVERSE_MAX_DEPTH = "deep"\n'
        (root / "shop" / "settings.py").write_text(settings, encoding="utf-8")
        extra = []
    elif where == "json":
        extra += ["-s", "TRAVERSE_LOG_FORMAT=json"]
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "plain", "-a", f"url={server.url('/')}",
         *crawl_args(tmp_path, server.origin), *extra],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    if where == "json":
        [error] = [json.loads(x) for x in run.stderr.splitlines()]
        assert error["level"] == "ERROR" and error["message"] == line
    else:
        [error] = run.stderr.splitlines()  # "__main__.py: error: ..." under python -m scrapy
        assert error.split(": error: ", 1)[1].startswith(line), error
    assert server.hits == []


def test_a_users_own_spider_whose_snapshot_store_is_gone_mid_crawl_is_exit_1(server, tmp_path):
    # Scrapy's own crawl command, the add-on's components: a lost snapshot sets the
    # process's failure flag, which Scrapy turns into exit 1.
    site(server)
    server.routes["/b"] = _replace_by_a_file(tmp_path / "store")
    root = make_project(tmp_path / "project")
    spider = USER_SPIDER + "        yield from response.follow_all(css='a')\n"
    (root / "shop" / "spiders" / "plain.py").write_text(spider, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "plain", "-a", f"url={server.url('/')}",
         *crawl_args(tmp_path, server.origin), "-s", "RETRY_TIMES=0",
         "-s", "LOGSTATS_INTERVAL=0"],
        cwd=root, env=scrapy_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr[-3000:]
    # ENOTDIR once the file stands where the store was, ENOENT in the moment between.
    failed = re.search(r"write failed \((Not a directory|No such file or directory)", run.stderr)
    assert failed is not None, run.stderr[-3000:]
    # /b's snapshot at least; /a's too when the writer had not written it yet (a loaded
    # machine), so the count is read, not assumed.
    lost = re.search(r"(\d+) result\(s\) could not be written for good: exit status 1", run.stderr)
    assert lost is not None and int(lost[1]) >= 1, run.stderr[-3000:]
    count = int(lost[1])
    assert re.search(rf"'traverse/lost': {count}\b", run.stderr), run.stderr[-3000:]
    assert re.search(rf"'snapshot/store_failed': {count}\b", run.stderr), run.stderr[-3000:]
    assert {h.path for h in server.hits} >= {"/", "/a", "/b"}  # the crawl went on


def test_the_stats_file_is_written_after_a_graceful_stop(server, tmp_path):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(5))
    server.site({"/": links, **{f"/p{i}": f"page {i}" for i in range(5)}})
    proc = popen(command(server, tmp_path, "-s", "TRAVERSE_MIN_DELAY=3"))
    wait_for(lambda: server.count("/") == 1, "the seed page")
    wait_for(lambda: any(p.startswith("/p") for p in server.started) or proc.poll(), "a page")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr[-2000:]
    manifest = read_json(next((tmp_path / "manifests").glob("*.json")))
    found = read_json(tmp_path / "out" / "stats.json")
    assert found["stats"]["finish_reason"] == "shutdown"
    seed = seed_of(found)
    assert {k: seed[k] for k in ("pages", "outcomes", "truncated", "warnings")} == totals_of(
        manifest
    )
    assert seed["truncated"] is True


def test_the_help_shows_the_exit_status_table_of_the_docs():
    run = scrapy("crawl", "traverse", "-h")
    assert run.returncode == 0, run.stderr
    docs = (REPO / "docs" / "monitoring.md").read_text(encoding="utf-8")
    for status in ("0", "1", "2"):
        assert [x for x in run.stdout.splitlines() if x.startswith(f"  {status}  ")]
        assert f"| {status} |" in docs
    assert "written for good (counted in the stats as traverse/lost)" in run.stdout
