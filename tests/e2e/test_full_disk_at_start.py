"""An output directory on a full filesystem (a real one: a 64 KiB tmpfs, filled) stops
``scrapy crawl`` before any request, one line naming the setting, exit 2."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jobdir_helpers import crawl_command, long_site, run
from tests.support.tmpfs import mounted_tmpfs


@pytest.fixture
def full_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A mounted tmpfs with no byte left (mounting needs root: CI runs as root)."""
    with mounted_tmpfs(tmp_path / "full", "64k") as mount:
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        assert os.statvfs(mount).f_bavail == 0
        yield mount


@pytest.mark.parametrize("setting", ["JOBDIR", "TRAVERSE_MANIFEST_DIR", "TRAVERSE_STORE"])
def test_an_output_directory_on_a_full_disk_is_exit_2_naming_it(
    server, tmp_path, full_filesystem, setting
):
    long_site(server)
    command = crawl_command(server, tmp_path, "-s", f"JOBDIR={tmp_path / 'job'}")
    command += ["-s", f"{setting}={full_filesystem / 'out'}"]
    refused = run(command)
    assert refused.returncode == 2, refused.stderr[-2000:]
    (line,) = [ln for ln in refused.stderr.splitlines() if "error:" in ln]
    assert line.split("error: ", 1)[1].startswith(f"{setting}: cannot write in "), line
    assert "No space left on device" in line, line
    assert "Traceback" not in refused.stderr
    assert server.hits == []
