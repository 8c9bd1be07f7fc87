"""traverse_crawl deployed to a real scrapyd runs exactly as from the command line.

One scrapyd per module, on a free loopback port, with basic auth and every
directory in tmp (tests/support/scrapyd_harness.py). The project is deployed with
``scrapyd-deploy`` from a copy of the working tree; jobs are scheduled through
``schedule.json`` with ``-d setting=...`` as docs/scrapyd.md shows.
"""

from __future__ import annotations

import configparser
import contextlib
import copy
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.scrapyd_harness import (
    PROJECT,
    ROOT,
    Scrapyd,
    clean_env,
    copy_project,
    error_lines,
    free_port,
)
from tests.support.server import Reply, Server, serve

VERSION = "1"
# Package data that the pyproject patterns must carry into the egg, nested
# included; written into the deployed copy only.
PROBE = "traverse_crawl/demo/site/pytest-probe/nested/probe.txt"

serving = contextlib.contextmanager(serve)


@pytest.fixture(scope="module")
def scrapyd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scrapyd]:
    if importlib.util.find_spec("pkg_resources") is None:
        pytest.fail("scrapyd 1.6 needs pkg_resources: setuptools<81 (requirements-dev.lock)")
    base = tmp_path_factory.mktemp("scrapyd")
    home = base / "home"
    home.mkdir()
    service = Scrapyd(home, free_port(), "pytest", "s3cret-pytest")
    try:
        service.start()
        project = copy_project(base / "project")
        probe = project / PROBE
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text("probe\n", encoding="utf-8")
        service.deploy(project, VERSION)
        yield service
    finally:
        service.stop()


def read_manifests(directory: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text("utf-8")) for p in sorted(directory.glob("*.json"))]


def one_manifest(directory: Path, service: Scrapyd, jobid: str) -> dict[str, Any]:
    found = read_manifests(directory)
    assert len(found) == 1, f"{len(found)} manifests in {directory}\n{service.job_log(jobid)}"
    return found[0]


def assert_clean_log(service: Scrapyd, jobid: str) -> str:
    """No ERROR line, no Traceback, a normal finish and exit status 0."""
    log = service.job_log(jobid)
    assert error_lines(log) == [], log
    assert "'finish_reason': 'finished'" in log, log
    assert f"Process finished: project='{PROJECT}' spider='traverse' job='{jobid}'" in (
        service.output(10_000)
    )
    return log


def without_timing(page: dict[str, Any]) -> dict[str, Any]:
    """A page with what legitimately differs between two runs removed."""
    page = copy.deepcopy(page)
    page.pop("sourceRef", None)  # it embeds fetchedAt
    page["fetch"].get("snapshot", {}).pop("fetchedAt", None)
    return page


def site(server: Server) -> list[tuple[str, int]]:
    """A small two-level site; returns its BFS order with depths."""
    server.site(
        {
            "/index.html": '<a href="a.html">A</a> <a href="b.html">B</a> '
            '<a href="notes.txt">notes</a>',
            "/a.html": '<a href="c.html">C</a> <a href="index.html">home</a>',
            "/b.html": '<a href="c.html">C again</a>',
            "/c.html": "<p>leaf</p>",
            "/notes.txt": Reply(body="plain notes\n", content_type="text/plain; charset=utf-8"),
        }
    )
    return [
        (server.url("/index.html"), 0),
        (server.url("/a.html"), 1),
        (server.url("/b.html"), 1),
        (server.url("/notes.txt"), 1),
        (server.url("/c.html"), 2),
    ]


# -- deployment ------------------------------------------------------------------


def test_scrapy_cfg_deploy_target() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "scrapy.cfg", encoding="utf-8")
    assert cfg["settings"]["default"] == "traverse_crawl.settings"
    url = cfg["deploy"]["url"]
    # A trailing slash breaks scrapyd-client's subcommands.
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", url), url
    assert cfg["deploy"]["project"] == PROJECT


@pytest.mark.scrapyd
def test_deploy_answer_spiders_and_auth(scrapyd: Scrapyd) -> None:
    answer = scrapyd.deployed
    assert answer["status"] == "ok", answer
    assert (answer["project"], answer["version"]) == (PROJECT, VERSION)
    assert scrapyd.get("listspiders.json", project=PROJECT)["spiders"] == ["traverse"]
    assert scrapyd.get("listversions.json", project=PROJECT)["versions"] == [VERSION]
    # Basic authentication is on: nothing is served without credentials.
    assert scrapyd.status_code("daemonstatus.json", auth=False) == 401
    assert scrapyd.status_code("listprojects.json", auth=False) == 401
    assert scrapyd.status_code("logs/", auth=False) == 401
    assert scrapyd.status_code("daemonstatus.json", auth=True) == 200


@pytest.mark.scrapyd
def test_egg_carries_code_package_data_and_settings_entry_point(scrapyd: Scrapyd) -> None:
    egg = scrapyd.egg_path(VERSION)
    assert egg.exists(), sorted(p.name for p in egg.parent.glob("*"))
    with zipfile.ZipFile(egg) as archive:
        names = set(archive.namelist())
        entry_points = archive.read("EGG-INFO/entry_points.txt").decode()
        # The deployed copy's probe: nested package data is packed.
        assert PROBE in names, sorted(names)
        assert archive.read(PROBE) == b"probe\n"
        # Compared with the copy it was built from: the working tree may change meanwhile.
        built_from = scrapyd.deployed_from
        assert built_from is not None
        for path in sorted((built_from / "traverse_crawl").rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            # Every file of the package, data included: a data file that no
            # [tool.setuptools.package-data] pattern matches is silently left out.
            name = path.relative_to(built_from).as_posix()
            assert name in names, f"{name} is missing from the egg (pyproject.toml package-data?)"
            assert archive.read(name) == path.read_bytes(), f"{name} differs in the egg"
    # scrapyd's runner finds the settings module through this entry point.
    section = entry_points.split("[scrapy]", 1)[1]
    assert re.search(r"^settings\s*=\s*traverse_crawl\.settings\s*$", section, re.MULTILINE)
    assert not any(n.startswith("tests/") for n in names), "the egg must not ship the tests"


# -- jobs ------------------------------------------------------------------------


@pytest.mark.scrapyd
def test_capture_then_replay_through_scrapyd(scrapyd: Scrapyd, tmp_path: Path) -> None:
    store, captured, replayed, cli = (
        tmp_path / "store",
        tmp_path / "manifests-capture",
        tmp_path / "manifests-replay",
        tmp_path / "manifests-cli",
    )
    with serving() as server:
        expected = site(server)
        seed = server.url("/index.html")
        common = {
            "TRAVERSE_EGRESS_ALLOW": server.origin,
            "TRAVERSE_MIN_DELAY": "0",
            "TRAVERSE_STORE": str(store),
        }
        capture = scrapyd.schedule(
            "traverse",
            args={"url": seed, "source_id": "site"},
            settings={**common, "TRAVERSE_MANIFEST_DIR": str(captured)},
        )
        job = scrapyd.wait(capture)
        capture_hits = len(server.paths())

        # The same crawl from the command line, for comparison.
        done = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={seed}"]
            + ["-a", "source_id=site"]
            + [
                arg
                for name, value in {
                    **common,
                    "TRAVERSE_STORE": str(tmp_path / "store-cli"),
                    "TRAVERSE_MANIFEST_DIR": str(cli),
                }.items()
                for arg in ("-s", f"{name}={value}")
            ],
            cwd=ROOT,
            env=clean_env(),
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    # The origin is gone now: a replay that touched the network would fail.

    log = assert_clean_log(scrapyd, capture)
    manifest = one_manifest(captured, scrapyd, capture)
    assert manifest["mode"] == "capture"
    assert manifest["seed"] == {"id": "site", "url": seed}
    assert [(p["url"], p["depth"]) for p in manifest["pages"]] == expected, log
    assert all("snapshot" in p["fetch"] and "sourceRef" in p for p in manifest["pages"]), log
    assert capture_hits >= len(expected)
    # Items land in scrapyd's items_dir, one per page, exactly the manifest's pages.
    items = scrapyd.job_items(capture)
    assert sorted(items, key=lambda p: p["id"]) == sorted(manifest["pages"], key=lambda p: p["id"])
    assert job["items_url"] == f"/items/{PROJECT}/traverse/{capture}.jl"
    assert scrapyd.text(job["log_url"]) == scrapyd.job_log(capture)

    stored = sorted(store.rglob("*.json"))
    assert len(stored) == len(expected), (
        f"capture stored {len(stored)} snapshot file(s) in TRAVERSE_STORE for "
        f"{len(expected)} pages (SnapshotStorePipeline)"
    )

    # scrapyd runs it exactly as the command line does.
    from_cli = one_manifest(cli, scrapyd, capture)
    assert [without_timing(p) for p in from_cli["pages"]] == [
        without_timing(p) for p in manifest["pages"]
    ]
    assert from_cli["warnings"] == manifest["warnings"]

    replay = scrapyd.schedule(
        "traverse",
        args={"url": seed, "source_id": "site"},
        settings={**common, "TRAVERSE_MODE": "replay", "TRAVERSE_MANIFEST_DIR": str(replayed)},
    )
    scrapyd.wait(replay)
    replay_log = scrapyd.job_log(replay)
    again = one_manifest(replayed, scrapyd, replay)
    assert again["mode"] == "replay"
    pages = [(p["url"], p["depth"], p.get("sourceRef")) for p in again["pages"]]
    assert pages == [(p["url"], p["depth"], p["sourceRef"]) for p in manifest["pages"]], (
        "replay did not reproduce the capture (replay store: SnapshotStorePipeline and "
        f"ReplayMiddleware)\n{json.dumps(again['pages'], indent=1)[:3000]}\n{replay_log}"
    )
    assert all(p["fetch"]["snapshot"].get("fromCache") is True for p in again["pages"])
    assert_clean_log(scrapyd, replay)


@pytest.mark.scrapyd
def test_invalid_setting_fails_the_job_naming_the_setting(scrapyd: Scrapyd, tmp_path: Path) -> None:
    with serving() as server:
        site(server)
        jobid = scrapyd.schedule(
            "traverse",
            args={"url": server.url("/index.html")},
            settings={
                "TRAVERSE_MAX_PAGES": "-1",
                "TRAVERSE_EGRESS_ALLOW": server.origin,
                "TRAVERSE_MANIFEST_DIR": str(tmp_path / "manifests"),
                "TRAVERSE_STORE": str(tmp_path / "store"),
            },
        )
        scrapyd.wait(jobid)
        hits = server.paths()
    log = scrapyd.job_log(jobid)
    errors = [line for line in error_lines(log) if "Traceback" not in line]
    assert errors, f"no ERROR line in the job log:\n{log}"
    named = [line for line in log.splitlines() if "TRAVERSE_MAX_PAGES" in line and "-1" in line]
    assert named, f"the log does not name TRAVERSE_MAX_PAGES and its value:\n{log}"
    # Exit status 2, as from a shell, which scrapyd's own log reports.
    assert re.search(rf"Process died: exitstatus=2 .*job='{jobid}'", scrapyd.output(10_000))
    # Stopped before any request.
    assert hits == []
    assert read_manifests(tmp_path / "manifests") == []
    assert scrapyd.job_items(jobid) == []


@pytest.mark.scrapyd
def test_a_job_that_could_not_write_its_manifest_dies_with_exit_status_1(
    scrapyd: Scrapyd, tmp_path: Path
) -> None:
    manifests = tmp_path / "manifests"

    def gone(_request: object) -> Reply:  # the manifest directory's disk swapped out
        if manifests.is_dir():
            shutil.rmtree(manifests)
            manifests.write_text("a file where the directory was", encoding="utf-8")
        return Reply(body="<p>leaf</p>")

    # A check that fails too: 1 (something lost) wins over 3.
    (tmp_path / "checks.toml").write_text("[crawl]\nmin_pages = 1000\n", encoding="utf-8")
    with serving() as server:
        site(server)
        server.routes["/c.html"] = gone
        jobid = scrapyd.schedule(
            "traverse",
            args={"url": server.url("/index.html")},
            settings={
                "TRAVERSE_EGRESS_ALLOW": server.origin,
                "TRAVERSE_MANIFEST_DIR": str(manifests),
                "TRAVERSE_STORE": str(tmp_path / "store"),
                "TRAVERSE_CHECKS": str(tmp_path / "checks.toml"),
            },
        )
        scrapyd.wait(jobid)
    log = scrapyd.job_log(jobid)
    assert "could not write manifest" in log, log
    assert "check crawl.min_pages of seed" in log, log
    assert re.search(rf"Process died: exitstatus=1 .*job='{jobid}'", scrapyd.output(10_000))


@pytest.mark.scrapyd
def test_a_job_whose_check_failed_dies_with_exit_status_3(scrapyd: Scrapyd, tmp_path: Path) -> None:
    (tmp_path / "checks.toml").write_text("[crawl]\nmin_pages = 1000\n", encoding="utf-8")
    with serving() as server:
        site(server)
        jobid = scrapyd.schedule(
            "traverse",
            args={"url": server.url("/index.html")},
            settings={
                "TRAVERSE_EGRESS_ALLOW": server.origin,
                "TRAVERSE_MANIFEST_DIR": str(tmp_path / "manifests"),
                "TRAVERSE_STORE": str(tmp_path / "store"),
                "TRAVERSE_CHECKS": str(tmp_path / "checks.toml"),
            },
        )
        scrapyd.wait(jobid)
    log = scrapyd.job_log(jobid)
    assert "check crawl.min_pages of seed" in log and "exit status 3" in log, log
    assert len(list((tmp_path / "manifests").glob("*.checks.json"))) == 1
    assert re.search(rf"Process died: exitstatus=3 .*job='{jobid}'", scrapyd.output(10_000))


@pytest.mark.scrapyd
def test_refused_addresses_are_egress_denied_under_scrapyd(
    scrapyd: Scrapyd, tmp_path: Path
) -> None:
    seeds = tmp_path / "seeds.txt"
    manifests = tmp_path / "manifests"
    with serving() as allowed, serving() as refused:
        site(refused)
        own = f"{scrapyd.origin}/daemonstatus.json"  # the service's own API
        seeds.write_text(f"refused\t{refused.url('/index.html')}\nservice\t{own}\n", "utf-8")
        jobid = scrapyd.schedule(
            "traverse",
            args={"seeds": str(seeds)},
            settings={
                # Another port on the same host: the allow-list is exact origins.
                "TRAVERSE_EGRESS_ALLOW": allowed.origin,
                "TRAVERSE_MIN_DELAY": "0",
                "TRAVERSE_MANIFEST_DIR": str(manifests),
                "TRAVERSE_STORE": str(tmp_path / "store"),
            },
        )
        scrapyd.wait(jobid)
        refused_hits, allowed_hits = refused.paths(), allowed.paths()
    log = assert_clean_log(scrapyd, jobid)
    by_id = {m["seed"]["id"]: m for m in read_manifests(manifests)}
    assert sorted(by_id) == ["refused", "service"], log
    outcomes = {
        seed_id: [p["fetch"].get("error", {}).get("kind", "snapshot") for p in m["pages"]]
        for seed_id, m in by_id.items()
    }
    assert outcomes == {"refused": ["egress-denied"], "service": ["egress-denied"]}, (
        "the egress guard (EgressGuardMiddleware) did not refuse loopback origins "
        f"outside TRAVERSE_EGRESS_ALLOW: {outcomes}"
    )
    # No request of any kind (robots.txt included) reached a refused origin.
    assert refused_hits == [], refused_hits
    assert allowed_hits == []
    job_agents = [
        agent
        for agent in re.findall(r'HTTP/1\.[01]" \d+ \S+ "[^"]*" "([^"]*)"', scrapyd.output(10_000))
        if not agent.startswith(("Python-urllib/", "python-requests/"))
    ]
    assert job_agents == [], f"a job reached scrapyd itself: {job_agents}"


@pytest.mark.scrapyd
def test_relative_store_and_manifest_dirs_resolve_against_scrapyd_cwd(scrapyd: Scrapyd) -> None:
    """The defaults are relative: a job writes them under scrapyd's working directory."""
    with serving() as server:
        server.site({"/only.html": "<p>one page</p>"})
        jobid = scrapyd.schedule(
            "traverse",
            args={"url": server.url("/only.html"), "source_id": "relative-paths"},
            settings={"TRAVERSE_EGRESS_ALLOW": server.origin, "TRAVERSE_MIN_DELAY": "0"},
        )
        scrapyd.wait(jobid)
    assert_clean_log(scrapyd, jobid)
    found = sorted((scrapyd.home / ".traverse" / "manifests").glob("relative-paths-*.json"))
    assert len(found) == 1, scrapyd.job_log(jobid)
    assert json.loads(found[0].read_text("utf-8"))["pages"][0]["url"] == server.url("/only.html")
    assert not list((ROOT / ".traverse" / "manifests").glob("relative-paths-*.json"))


@pytest.mark.scrapyd
def test_a_cancelled_job_with_a_jobdir_resumes_when_scheduled_again(
    scrapyd: Scrapyd, tmp_path: Path
) -> None:
    manifests = tmp_path / "manifests"
    with serving() as server:
        links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(30))
        server.site({"/": links, **{f"/p{i}": f"page {i}" for i in range(30)}})
        settings = {
            "TRAVERSE_EGRESS_ALLOW": server.origin,
            "TRAVERSE_MIN_DELAY": "0.2",
            "TRAVERSE_MAX_PAGES": "31",
            "TRAVERSE_STORE": str(tmp_path / "store"),
            "TRAVERSE_MANIFEST_DIR": str(manifests),
            "JOBDIR": str(tmp_path / "job"),
        }
        first = scrapyd.schedule("traverse", args={"url": server.url("/")}, settings=settings)
        deadline = time.monotonic() + 60
        while server.count("/p4") == 0:
            assert time.monotonic() < deadline, scrapyd.job_log(first)
            time.sleep(0.05)
        scrapyd._request("cancel.json", [("project", PROJECT), ("job", first)])  # POST, as curl -d
        scrapyd.wait(first)
        stopped = one_manifest(manifests, scrapyd, first)
        assert stopped["warnings"][-1].startswith("crawl stopped before this seed finished")
        assert 5 <= len(stopped["pages"]) < 31
        # Scheduled again, without the seed: the job resumes from the JOBDIR.
        second = scrapyd.schedule("traverse", args={}, settings=settings)
        scrapyd.wait(second)
        log = assert_clean_log(scrapyd, second)
        assert "resumed with" in log
        done = one_manifest(manifests, scrapyd, second)
        assert [p["url"] for p in done["pages"]] == [server.url("/")] + [
            server.url(f"/p{i}") for i in range(30)
        ]
        assert done["truncated"] is False and done["warnings"] == []
        paths = [p for p in server.paths() if p != "/robots.txt"]
        assert sorted(paths) == sorted(set(paths)), "a page was fetched twice"


@pytest.mark.scrapyd
@pytest.mark.redis
def test_two_scrapyd_jobs_are_workers_of_one_distributed_crawl(
    scrapyd: Scrapyd,
    redis_server: RedisServer,  # noqa: F811  (the fixture)
    tmp_path: Path,
) -> None:
    """A job given the seed and a job given none: workers of one crawl in Redis."""
    pages = {"/": "".join(f'<a href="/p{i}">{i}</a>' for i in range(30))}
    pages.update({f"/p{i}": Reply(body=f'<a href="/">home</a> {i}', delay=0.05) for i in range(30)})
    with serving() as server:
        server.site(pages)
        settings = {
            "TRAVERSE_EGRESS_ALLOW": server.origin,
            "TRAVERSE_MIN_DELAY": "0",
            "TRAVERSE_MAX_PAGES": "31",
            "TRAVERSE_STORE": str(tmp_path / "store"),
            "TRAVERSE_MANIFEST_DIR": str(tmp_path / "manifests"),
            "REDIS_URL": redis_server.url,
            "TRAVERSE_CRAWL_ID": "scrapyd",
            "CONCURRENT_REQUESTS": "4",
        }
        first = scrapyd.schedule("traverse", args={"url": server.url("/")}, settings=settings)
        second = scrapyd.schedule("traverse", args={}, settings=settings)
        for jobid in (first, second):
            scrapyd.wait(jobid, timeout=120)
            log = assert_clean_log(scrapyd, jobid)
            assert "every manifest written" in log, log
        found = one_manifest(tmp_path / "manifests", scrapyd, first)
        assert [p["url"] for p in found["pages"]] == [server.url("/")] + [
            server.url(f"/p{i}") for i in range(30)
        ]
        # Every page fetched once, by one job or the other (robots.txt aside: its one
        # fetch per crawl is checked in test_distributed_politeness.py).
        assert sorted(p for p in server.paths() if p != "/robots.txt") == sorted(pages)
