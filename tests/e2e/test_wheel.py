"""``pip wheel .`` builds a wheel holding the whole package: every module, ``py.typed``
and the demo site's files, with the runtime dependencies in its metadata.

Built from a copy of the project's sources, so the build leaves nothing in the
checkout and no earlier ``build/`` directory can add stale files to the wheel.
"""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import zipfile

import traverse_crawl
from tests.support.cli import REPO

PACKAGE = REPO / "traverse_crawl"


def test_the_wheel_holds_every_module_py_typed_and_the_demo_site(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(REPO / "pyproject.toml", source)
    shutil.copytree(
        PACKAGE, source / "traverse_crawl", ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            ".",
        ],
        cwd=source,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("traverse_crawl-*.whl")
    assert wheel.name == f"traverse_crawl-{traverse_crawl.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata,) = (name for name in names if name.endswith(".dist-info/METADATA"))
        requires = email.message_from_bytes(archive.read(metadata)).get_all("Requires-Dist")

    expected = {
        path.relative_to(REPO).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
        and (path.suffix in (".py", ".toml") or path.name == "py.typed" or "site" in path.parts)
    }  # fmt: skip
    assert "traverse_crawl/py.typed" in expected
    assert "traverse_crawl/demo/checks.toml" in expected  # the demo's extraction and checks
    assert "traverse_crawl/demo/site/guide/lamps.html" in expected
    assert sorted(expected - names) == []
    assert {re.split(r"[ ;<>=!~\[]", name)[0].lower() for name in requires} >= {
        "scrapy",
        "parsel",
        "itemadapter",
    }
