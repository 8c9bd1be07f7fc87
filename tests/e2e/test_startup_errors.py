"""A bad setting, argument or output path stops ``scrapy crawl`` before any request: one
error line naming it, exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.scrapyd_harness import free_port


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["-s", "DOWNLOAD_MAXSIZE=1e6"], "DOWNLOAD_MAXSIZE: expected a whole number >= 0"),
        (["-s", "CONCURRENT_REQUESTS_PER_DOMAIN=-1"], "CONCURRENT_REQUESTS_PER_DOMAIN: expected"),
        (["-s", "TRAVERSE_MIN_DELAY=1e308"], "TRAVERSE_MIN_DELAY: expected a number of seconds"),
        (["-s", "LOG_LEVEL=LOUD"], "LOG_LEVEL: expected one of CRITICAL"),
        (["-s", "USER_AGENT="], "USER_AGENT: expected a non-empty"),
        (["-a", "source-id=x"], "arguments: unknown spider argument(s) source-id"),
    ],
)
def test_bad_setting_or_argument_is_one_line_and_exit_2(server, tmp_path, args, line):
    server.site({"/": "home"})
    run = scrapy(
        "crawl",
        "traverse",
        *crawl_args(tmp_path, server.origin),
        "-a",
        f"url={server.url('/')}",
        *args,
    )
    assert run.returncode == 2, run.stderr
    errors = [x for x in run.stderr.splitlines() if "error:" in x]
    assert len(errors) == 1 and line in errors[0], run.stderr
    assert "Traceback" not in run.stderr
    assert server.hits == []


def test_store_path_that_is_a_file_is_not_a_directory(server, tmp_path):
    store = tmp_path / "store"
    store.write_text("I am a file")
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), "-a", f"url={server.url('/')}"
    )
    assert run.returncode == 2
    assert f"error: TRAVERSE_STORE: {str(store)!r} is not a directory" in run.stderr
    assert "File exists" not in run.stderr


def test_crawl_refuses_unreachable_redis_and_jobdir(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    base = ["crawl", "traverse", "-a", "url=http://127.0.0.1:1/", *crawl_args(tmp_path)]
    result = scrapy(*base, "-s", f"REDIS_URL={url}")
    assert result.returncode == 2
    assert "REDIS_URL: cannot reach Redis at" in result.stderr
    result = scrapy(*base, "-s", f"REDIS_URL={url}", "-s", f"JOBDIR={tmp_path / 'job'}")
    assert result.returncode == 2
    assert "JOBDIR/REDIS_URL: give one of them" in result.stderr
