"""Every output a crawl writes is checked before the first request: an items directory,
a WARC directory or a stats file's directory that is a regular file or read-only, and a
metrics host that is no host name, each stop ``scrapy crawl`` with one line naming the
setting and exit status 2, no traceback (docs/monitoring.md, "Exit status")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_exit_status import without_permission_override
from tests.e2e.test_metrics import free_port
from tests.support import product_site
from tests.support.cli import REPO, crawl_args, scrapy_env
from tests.support.server import Server

# The setting, and the value it gets for a path that is ``target`` (a directory that
# cannot be used): the stats file is a file in it.
OUTPUTS = {
    "TRAVERSE_ITEMS_DIR": lambda target: str(target),
    "TRAVERSE_WARC_DIR": lambda target: str(target),
    "TRAVERSE_STATS_FILE": lambda target: str(target / "stats.json"),
}


def crawl(server: Server, tmp_path: Path, *more: str) -> subprocess.CompletedProcess[str]:
    server.site(product_site.PAGES)
    (tmp_path / "extract.toml").write_text(product_site.RULES, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable, "-m", "scrapy", "crawl", "traverse", "-a", f"url={server.url('/')}",
            *crawl_args(tmp_path, server.origin),
            "-s", f"TRAVERSE_EXTRACT={tmp_path / 'extract.toml'}", *more,
        ],
        cwd=REPO, env=scrapy_env(), capture_output=True, text=True, timeout=60, check=False,
        # Root writes where the mode forbids; a service's root does not (test_exit_status).
        preexec_fn=without_permission_override if os.geteuid() == 0 else None,
    )  # fmt: skip


def assert_refused(run: subprocess.CompletedProcess[str], setting: str, server: Server) -> str:
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if "error:" in line.lower()]
    assert len(errors) == 1, run.stderr[-3000:]
    assert f"error: {setting}: " in errors[0], errors
    assert "Traceback" not in run.stderr and "never retrieved" not in run.stderr
    assert server.hits == []  # nothing was requested
    return errors[0]


@pytest.mark.parametrize("setting", sorted(OUTPUTS))
def test_an_output_path_under_a_regular_file_is_exit_2_naming_it(server, tmp_path, setting):
    regular = tmp_path / "regular"
    regular.write_text("not a directory")
    run = crawl(server, tmp_path, "-s", f"{setting}={OUTPUTS[setting](regular)}")
    line = assert_refused(run, setting, server)
    assert "not a directory" in line.lower(), line
    assert regular.read_text() == "not a directory"


@pytest.mark.parametrize("setting", sorted(OUTPUTS))
def test_an_output_path_in_a_read_only_directory_is_exit_2_naming_it(server, tmp_path, setting):
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    read_only.chmod(0o555)
    try:
        run = crawl(server, tmp_path, "-s", f"{setting}={OUTPUTS[setting](read_only)}")
    finally:
        read_only.chmod(0o755)
    line = assert_refused(run, setting, server)
    assert "Permission denied" in line, line
    assert list(read_only.iterdir()) == []


@pytest.mark.parametrize("host", ["not..a..host", "-bad", "a b"])
def test_a_metrics_host_that_is_no_host_name_is_exit_2_naming_it(server, tmp_path, host):
    run = crawl(
        server, tmp_path,
        "-s", f"TRAVERSE_METRICS_HOST={host}", "-s", f"TRAVERSE_METRICS_PORT={free_port()}",
    )  # fmt: skip
    line = assert_refused(run, "TRAVERSE_METRICS_HOST", server)
    assert repr(host) in line, line
