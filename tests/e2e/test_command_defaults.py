"""Every command sees the add-on's defaults, not Scrapy's, though only ``scrapy crawl``
builds a crawler: each command of the project run as a user runs it, with its log on
(``-s LOG_ENABLED=True``), whose first lines say the level and the settings in force
(docs/settings.md, "Scrapy settings with a traverse meaning"). Then the same in a user's
own project that enables the add-on and finds the commands through the package's entry
points.

One real capture of the product site (with extraction) is shared by the tests.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warcio.warcwriter import WARCWriter

from tests.support import product_site
from tests.support.bombs import gzip_zeros
from tests.support.cli import REPO, crawl_args, scrapy, scrapy_env
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.server import serve
from tests.support.warctools import write_response
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.distributed.frontier import join_crawl

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

MAXSIZE = 32 * 1024 * 1024  # the add-on's DOWNLOAD_MAXSIZE; Scrapy's is 1 GiB
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[([\w.]+)\] ([A-Z]+): ", re.MULTILINE)
LOG_ON = ("-s", "LOG_ENABLED=True")


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store, manifests and items of one real ``scrapy crawl`` of the product site."""
    root = tmp_path_factory.mktemp("captured")
    (root / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    for server in serve():
        server.site(product_site.PAGES)
        run = scrapy(
            "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=shop",
            *crawl_args(root, server.origin), *extraction(root, root / "items"),
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        (root / "crawl.stderr").write_text(run.stderr, encoding="utf-8")
    return root


def extraction(root: Path, items: Path) -> list[str]:
    return ["-s", f"TRAVERSE_EXTRACT={root / 'extract.toml'}", "-s", f"TRAVERSE_ITEMS_DIR={items}"]


def store(root: Path) -> list[str]:
    return ["-s", f"TRAVERSE_STORE={root / 'store'}"]


def overridden(stderr: str) -> dict[str, Any]:
    """The settings the log names as not Scrapy's defaults (one INFO line, then a dict)."""
    lines = stderr.split("INFO: Overridden settings:\n", 1)[1].splitlines()
    for end in range(1, len(lines) + 1):
        try:
            return dict(ast.literal_eval("\n".join(lines[:end])))
        except SyntaxError:
            continue
    raise AssertionError(f"no settings in the log: {stderr[-3000:]}")


def assert_logged_at_info(stderr: str) -> dict[str, Any]:
    """The command's log: on, at INFO (no DEBUG line), with the add-on's values in force;
    the settings it names."""
    levels = {level for _, level in LOG_LINE.findall(stderr)}
    assert "INFO" in levels, stderr[-3000:]
    assert "DEBUG" not in levels and " DEBUG: " not in stderr, stderr[-3000:]
    assert re.search(r"INFO: Scrapy 2\.\d+\.\d+ started \(bot: ", stderr), stderr[-3000:]
    settings = overridden(stderr)
    assert settings["LOG_LEVEL"] == "INFO"
    assert settings["DOWNLOAD_MAXSIZE"] == MAXSIZE
    return settings


def test_crawl(captured):
    # The one command that builds a crawler: Scrapy applies the add-on itself.
    settings = assert_logged_at_info((captured / "crawl.stderr").read_text(encoding="utf-8"))
    assert settings["USER_AGENT"].startswith("traverse_crawl-bot/")


def test_snapshots(captured):
    run = scrapy("snapshots", "shop", *store(captured), *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]
    assert len(run.stdout.splitlines()) == len(product_site.PAGES)
    assert_logged_at_info(run.stderr)


def test_snapshot(captured, tmp_path):
    manifest = next((captured / "manifests").glob("*.json")).read_text(encoding="utf-8")
    ref = re.search(r'"sourceRef": "([^"]+)"', manifest)
    assert ref is not None
    run = scrapy("snapshot", ref.group(1), "-o", str(tmp_path / "page.html"),
                 "--meta", str(tmp_path / "meta.json"), *store(captured), *LOG_ON)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "page.html").read_text(encoding="utf-8") == product_site.HOME
    assert_logged_at_info(run.stderr)


def test_warc_export_and_import(captured, tmp_path):
    archive = tmp_path / "shop.warc.gz"
    run = scrapy("warc", "export", "-o", str(archive), *store(captured), *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout == f"exported {len(product_site.PAGES)} snapshot(s) to {archive}\n"
    assert_logged_at_info(run.stderr)
    run = scrapy("warc", "import", str(archive), "--source-id", "again", *store(tmp_path), *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith(f"imported {len(product_site.PAGES)} snapshot(s)")
    assert_logged_at_info(run.stderr)


def test_extract(captured, tmp_path):
    run = scrapy(
        "extract", *store(captured), "-s", f"TRAVERSE_MANIFEST_DIR={captured / 'manifests'}",
        *extraction(captured, tmp_path / "items"), *LOG_ON,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("seed shop: 5 item(s) from 5 page(s) -> ")
    settings = assert_logged_at_info(run.stderr)
    assert settings["FEED_EXPORT_ENCODING"] == "utf-8"


def test_report(captured, tmp_path):
    output = tmp_path / "report.html"
    run = scrapy(
        "report", str(captured / "manifests"), "-o", str(output), *store(captured), *LOG_ON
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert output.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert_logged_at_info(run.stderr)


def test_diff(captured):
    manifests = str(captured / "manifests")
    run = scrapy("diff", manifests, manifests, "--json", "--exit-code", *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]  # 1 if anything differed
    assert json.loads(run.stdout)["counts"]["unchanged"] == len(product_site.PAGES)
    assert_logged_at_info(run.stderr)


def test_settings_shows_what_the_commands_run_with():
    # Scrapy's own command, which builds no crawler either: the values a user checks.
    for name, value in (("DOWNLOAD_MAXSIZE", str(MAXSIZE)), ("LOG_LEVEL", "INFO")):
        run = scrapy("settings", "--get", name)
        assert run.returncode == 0, run.stderr[-3000:]
        assert run.stdout.strip() == value
    run = scrapy("settings", "--get", "DOWNLOAD_MAXSIZE", "-s", "DOWNLOAD_MAXSIZE=1000")
    assert run.stdout.strip() == "1000"


def test_without_a_log_a_command_prints_only_its_own_lines(captured):
    # No -L, --logfile or LOG_ENABLED: no log is configured, and stderr stays clean.
    run = scrapy("snapshots", "shop", *store(captured))
    assert run.returncode == 0 and run.stderr == "", run.stderr[-3000:]


@pytest.mark.redis
def test_crawlstatus(redis_server: RedisServer):  # noqa: F811
    # A crawl in Redis, joined as a worker joins one, under the default TRAVERSE_CRAWL_ID
    # ("traverse"): the command shows that one when given no crawl id.
    join_crawl(TraverseConfig.from_settings({"REDIS_URL": redis_server.url}),
               [Seed("shop", "http://shop.test/")])  # fmt: skip
    run = scrapy("crawlstatus", "-s", f"REDIS_URL={redis_server.url}", *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("crawl traverse: 1 seed(s)")
    assert_logged_at_info(run.stderr)


# -- a user's own project ----------------------------------------------------------------

SETTINGS = """\
BOT_NAME = "shop"
SPIDER_MODULES = []
ADDONS = {"traverse_crawl.Addon": 100}
"""


def installed(site: Path) -> Path:
    """traverse_crawl as pip installs it, as far as Scrapy looks: its sources on the path
    and a dist-info with the entry points of pyproject.toml (the commands)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = site / "traverse_crawl-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: traverse_crawl\nVersion: 0\n", encoding="utf-8"
    )
    groups = project["entry-points"]
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
            for group, points in groups.items()
        ),
        encoding="utf-8",
    )
    return site


def user_project(root: Path) -> Path:
    """A project with the add-on and no COMMANDS_MODULE; ``shop.bounded`` is its settings
    with a DOWNLOAD_MAXSIZE of its own."""
    (root / "shop").mkdir(parents=True)
    (root / "scrapy.cfg").write_text("[settings]\ndefault = shop.settings\n", encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("", encoding="utf-8")
    (root / "shop" / "settings.py").write_text(SETTINGS, encoding="utf-8")
    (root / "shop" / "bounded.py").write_text(
        "from shop.settings import *  # noqa: F403\nDOWNLOAD_MAXSIZE = 5000000\n", encoding="utf-8"
    )
    return root


def bomb(path: Path) -> Path:
    """A few KB of WARC: a page whose gzip payload inflates to a GiB, then a small page."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, payload, coding in (
            ("http://shop.test/bomb", gzip_zeros(1 << 30), [("Content-Encoding", "gzip")]),
            ("http://shop.test/page", b"<p>page</p>", []),
        ):
            write_response(writer, url, payload, coding)
    return path


def run_in(project: Path, env: dict[str, str], *args: str) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "scrapy", *args], cwd=project, env=env,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_a_user_projects_commands_take_the_addons_defaults(tmp_path):
    # The project has no COMMANDS_MODULE: `warc` is the package's, through its entry point.
    project = user_project(tmp_path / "project")
    env = {**scrapy_env(), "PYTHONPATH": f"{installed(tmp_path / 'site')}:{REPO}"}
    archive = bomb(tmp_path / "bomb.warc.gz")
    imported = ("warc", "import", str(archive), "--source-id", "t")
    run = run_in(project, env, *imported, "-s", f"TRAVERSE_STORE={tmp_path / 'a'}", *LOG_ON)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "imported 1 snapshot(s) from 2 record(s)" in run.stdout
    assert "1 record(s) larger than DOWNLOAD_MAXSIZE not imported" in run.stdout
    assert f"http://shop.test/bomb: payload larger than DOWNLOAD_MAXSIZE ({MAXSIZE} bytes)" in (
        run.stderr
    )
    # The add-on's values in force; the log at Scrapy's own level: the project did not
    # opt in to the process tuning (docs/settings.md, "Process tuning").
    settings = overridden(run.stderr)
    assert settings["DOWNLOAD_MAXSIZE"] == MAXSIZE
    assert "LOG_LEVEL" not in settings, run.stderr[-3000:]
    assert settings["BOT_NAME"] == "shop"  # the user's project, not this one
    # The project's own value wins over the add-on's (its settings module, chosen by
    # SCRAPY_SETTINGS_MODULE as scrapy.cfg would).
    env = {**env, "SCRAPY_SETTINGS_MODULE": "shop.bounded"}
    run = run_in(project, env, *imported, "-s", f"TRAVERSE_STORE={tmp_path / 'b'}")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "payload larger than DOWNLOAD_MAXSIZE (5000000 bytes)" in run.stderr
