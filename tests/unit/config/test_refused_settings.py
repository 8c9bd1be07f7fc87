"""Bad settings and arguments stop `scrapy crawl` before any request (issue 10)."""

from __future__ import annotations

import pytest
import pytest_twisted

from tests.support.cli import crawl_args, scrapy
from traverse_crawl.config.scrapy_settings import check_scrapy_settings
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.crawl.seeds import read_seeds
from traverse_crawl.errors import ConfigError


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"CONCURRENT_REQUESTS_PER_DOMAIN": "-1"}, "CONCURRENT_REQUESTS_PER_DOMAIN"),
        ({"CONCURRENT_REQUESTS": "0"}, "CONCURRENT_REQUESTS"),
        ({"CONCURRENT_ITEMS": "two"}, "CONCURRENT_ITEMS"),
        ({"DOWNLOAD_WARNSIZE": "1e6"}, "DOWNLOAD_WARNSIZE"),
        ({"DNS_TIMEOUT": "inf"}, "DNS_TIMEOUT"),
        ({"CLOSESPIDER_PAGECOUNT": "-3"}, "CLOSESPIDER_PAGECOUNT"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
    ],
)
def test_scrapy_settings_no_crawl_can_use_are_refused(settings, named):
    with pytest.raises(ConfigError) as caught:
        check_scrapy_settings(settings)
    assert caught.value.name == named


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"DOWNLOAD_MAXSIZE": "1e6"}, "DOWNLOAD_MAXSIZE"),
        ({"REDIRECT_MAX_TIMES": "3.0"}, "REDIRECT_MAX_TIMES"),
        ({"TRAVERSE_MIN_DELAY": "1e308"}, "TRAVERSE_MIN_DELAY"),
        ({"TRAVERSE_RETRY_BACKOFF": "1e9"}, "TRAVERSE_RETRY_BACKOFF"),
        ({"TRAVERSE_RETRY_AFTER_MAX": "1e9"}, "TRAVERSE_RETRY_AFTER_MAX"),
        ({"TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": "1e9"}, "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX"),
        ({"DOWNLOAD_TIMEOUT": "1e308"}, "DOWNLOAD_TIMEOUT"),
        ({"USER_AGENT": ""}, "USER_AGENT"),
        ({"USER_AGENT": "   "}, "USER_AGENT"),
        ({"TRAVERSE_MAX_LINKS_PER_PAGE": "-1"}, "TRAVERSE_MAX_LINKS_PER_PAGE"),
        ({"TRAVERSE_MAX_HEADER_SIZE": "10"}, "TRAVERSE_MAX_HEADER_SIZE"),
    ],
)
def test_traverse_config_refuses_values_that_never_fetch(settings, named):
    with pytest.raises(ConfigError) as caught:
        TraverseConfig.from_settings(settings)
    assert caught.value.name == named


def test_accepted_forms_still_parse():
    config = TraverseConfig.from_settings(
        {"DOWNLOAD_MAXSIZE": "1000000", "TRAVERSE_MIN_DELAY": "-2", "USER_AGENT": "bot/1"}
    )
    assert config.download_maxsize == 1_000_000
    assert config.min_delay == 0.0
    check_scrapy_settings({"LOG_LEVEL": "info", "CONCURRENT_REQUESTS": 16, "DNS_TIMEOUT": "60"})


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


def test_seeds_file_with_a_utf8_bom(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes("\ufeffhome\thttp://example.test/\nhttp://example.test/b\n".encode())
    assert [(s.id, s.url) for s in read_seeds(str(seeds))] == [
        ("home", "http://example.test/"),
        ("http://example.test/b", "http://example.test/b"),
    ]


@pytest_twisted.ensureDeferred
async def test_bom_seed_is_crawled(server, crawl, tmp_path):
    server.site({"/": "home"})
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(("\ufeff" + server.url("/") + "\n").encode())
    result = await crawl(seeds=str(seeds))
    page = result.manifest["pages"][0]
    assert result.manifest["seed"]["id"] == server.url("/")
    assert "snapshot" in page["fetch"]
