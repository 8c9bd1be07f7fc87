"""The core install: a venv with only what ``pip install traverse_crawl`` (no extras) pulls.

Made from the lock file itself (the same pins and hashes), keeping only the packages the
core dependencies of pyproject.toml need. In it a crawl runs; a setting that turns on a
feature whose extra is not there exits 2 with one line naming the setting and the extra.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import REPO, crawl_args
from tests.support.lock_file import closure, project, read_lock, requirement_name
from tests.support.server import Server


@pytest.fixture(scope="module")
def core_python(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("core")
    packages = read_lock(REPO / "requirements.lock")
    core = closure({requirement_name(r) for r in project()["dependencies"]}, packages)
    lock = root / "core.lock"
    lock.write_text(
        "".join("\n".join(packages[name][0]) + "\n" for name in sorted(core)), encoding="utf-8"
    )
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    uv = REPO / ".venv-lock" / "bin" / "uv"  # .ci/run's installer, when it is there
    install = (
        [str(uv), "pip", "install", "-q", "--python", str(python)]
        if uv.exists()
        else [str(python), "-m", "pip", "install", "-q"]
    )
    subprocess.run([*install, "--require-hashes", "--no-deps", "-r", str(lock)], check=True)
    return python


def run(python: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SCRAPY_SETTINGS_MODULE", None)
    return subprocess.run(
        [str(python), "-m", "scrapy", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_the_core_install_has_none_of_the_features_packages(core_python):
    probe = (
        "import importlib.util as u; "
        "print([m for m in ('warcio', 'isal', 'redis', 'prometheus_client', 'botocore', "
        "'playwright', 'scrapy_playwright') if u.find_spec(m)])"
    )
    shown = subprocess.run(
        [str(core_python), "-c", probe], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "[]"


def test_a_crawl_runs_on_the_core_install(core_python, server: Server, tmp_path):
    server.site({"/": '<a href="/a">a</a>', "/a": "<p>a</p>"})
    done = run(core_python, "crawl", "traverse", "-a", f"url={server.url('/')}",
               *crawl_args(tmp_path, server.origin))  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    pages = json.loads(manifest.read_text(encoding="utf-8"))["pages"]
    assert [page["url"] for page in pages] == [server.url("/"), server.url("/a")]


@pytest.mark.parametrize(
    ("setting", "extra"),
    [
        ("TRAVERSE_WARC_DIR=warc", "warc"),
        ("REDIS_URL=redis://127.0.0.1:1/0", "redis"),
        ("TRAVERSE_METRICS_PORT=9", "metrics"),
        ("TRAVERSE_RENDER=always", "render"),
        ("TRAVERSE_STORE=s3://bucket/crawl", "s3"),
    ],
)
def test_a_feature_whose_extra_is_missing_exits_2_naming_it(
    core_python, server: Server, tmp_path, setting, extra
):
    name = setting.split("=", 1)[0]
    refused = run(core_python, "crawl", "traverse", "-a", f"url={server.url('/')}",
                  *crawl_args(tmp_path, server.origin), "-s", setting)  # fmt: skip
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert f"[{extra}]" in refused.stderr and "Traceback" not in refused.stderr
    (line,) = [line for line in refused.stderr.splitlines() if f"[{extra}]" in line]
    assert f"error: {name}: " in line and f"needs the [{extra}] extra" in line, line
    assert f"pip install 'traverse_crawl[{extra}]'" in line
    assert server.hits == []  # refused before any request


@pytest.mark.parametrize(
    ("command", "extra"),
    [(["warc", "export", "-o", "out.warc.gz"], "warc"), (["crawlstatus"], "redis")],
)
def test_a_command_whose_extra_is_missing_exits_2_naming_it(core_python, tmp_path, command, extra):
    refused = run(core_python, *command, "-s", f"TRAVERSE_STORE={tmp_path}")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert f"[{extra}]" in refused.stderr and "Traceback" not in refused.stderr
