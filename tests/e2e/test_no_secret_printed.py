"""No password in what a crawl prints or hands on: a seed URL's and a link's
``user:password@``, and ``REDIS_URL``'s, masked in every log line (DEBUG item dumps
and "Overridden settings" included), the stats file, the report, WARC ``warcinfo``
and ``crawlstatus``; the start-up warning for a seed id that keeps it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.redisserver import RedisServer, redis_server  # noqa: F401  (fixture)
from tests.support.server import Server, serve

SECRET = "s3cret"
LINK_SECRET = "l1nkpw"


@pytest.fixture
def server():
    yield from serve()


def site(server: Server) -> str:
    """A seed URL with a password, linking to a page with another one."""
    host = server.origin.removeprefix("http://")
    server.site(
        {
            "/": f'<a href="/a">a</a> <a href="http://u2:{LINK_SECRET}@{host}/b">b</a>',
            "/a": "<p>a</p>",
            "/b": "<p>b</p>",
        }
    )
    return f"http://user:{SECRET}@{host}/"


def assert_no_secret(text: str, where: str) -> None:
    for secret in (SECRET, LINK_SECRET):
        assert secret not in text, f"{secret!r} in {where}"


def warcinfo_blocks(directory: Path) -> str:
    blocks = []
    for path in directory.glob("*.warc.gz"):
        data = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        for record in data.split("WARC/1.1\r\n"):
            if "WARC-Type: warcinfo" in record:
                blocks.append(record)
    assert blocks, f"no warcinfo record in {directory}"
    return "\n".join(blocks)


def test_no_password_in_debug_log_stats_report_or_warcinfo(server, tmp_path):
    seed = site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={seed}", *crawl_args(tmp_path, server.origin),
        "-s", "LOG_LEVEL=DEBUG",
        "-s", f"TRAVERSE_WARC_DIR={tmp_path / 'warc'}",
        "-s", f"TRAVERSE_STATS_FILE={tmp_path / 'stats.json'}",
        "-O", str(tmp_path / "items.jsonl"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    # The crawl did fetch all three pages, the one behind the link's password included.
    assert server.count("/b") == 1
    assert "Scraped from <200" in run.stderr  # the DEBUG item dumps were printed...
    assert "http://user:***@" in run.stderr  # ...with the password masked
    assert_no_secret(run.stdout + run.stderr, "the crawl's output")
    # Warned once, at start, naming the way out.
    warnings = [line for line in run.stderr.splitlines() if "carries a password" in line]
    assert len(warnings) == 1, warnings
    assert "-a source_id=" in warnings[0] and "WARNING" in warnings[0]
    # The manifest line names its file by a glob that finds it.
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    shown = [line for line in run.stderr.splitlines() if "manifest for seed" in line]
    assert shown and shown[0].endswith("*-" + manifest.name.rsplit("-", 1)[1])

    stats = (tmp_path / "stats.json").read_text()
    assert_no_secret(stats, "the stats file")
    assert json.loads(stats)["seeds"][0]["url"] == seed.replace(SECRET, "***")
    assert_no_secret(warcinfo_blocks(tmp_path / "warc"), "WARC warcinfo")

    out = tmp_path / "report.html"
    report = scrapy("report", str(manifest), "-o", str(out))
    assert report.returncode == 0, report.stderr
    html = out.read_text()
    assert "user:***@" in html
    assert_no_secret(html, "the report")
    assert_no_secret(report.stderr, "the report command's errors")


def test_no_password_in_json_log_lines(server, tmp_path):
    seed = site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={seed}", *crawl_args(tmp_path, server.origin),
        "-s", "LOG_LEVEL=DEBUG", "-s", "TRAVERSE_LOG_FORMAT=json",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stderr.splitlines()]
    assert_no_secret(run.stderr, "the JSON log")
    # The fields that say what a line is about are kept, masked.
    scraped = [line for line in lines if line["message"].startswith("Scraped from")]
    assert len(scraped) == 3
    assert all(line["url"].startswith(server.origin) for line in scraped)
    assert {line.get("seed") for line in scraped} == {seed.replace(SECRET, "***")}


def test_a_source_id_keeps_the_password_out_of_the_manifest_name(server, tmp_path):
    seed = site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={seed}", "-a", "source_id=private",
        *crawl_args(tmp_path, server.origin),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert_no_secret(run.stderr, "the crawl's output")
    (manifest,) = (tmp_path / "manifests").glob("*.json")
    assert manifest.name.startswith("private-") and SECRET not in manifest.name
    # The seed page's own URL (its page id, its store directory) still has it: said once.
    (warning,) = [line for line in run.stderr.splitlines() if "carries a password" in line]
    assert "seed URL 'http://user:***@" in warning and "source_id" not in warning


def test_no_redis_password_in_a_start_up_error(server, tmp_path):
    # Nothing listens on port 1: the crawl stops at start, naming REDIS_URL.
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", *crawl_args(tmp_path, server.origin),
        "-s", f"REDIS_URL=redis://:{SECRET}@127.0.0.1:1/0",
    )  # fmt: skip
    assert run.returncode != 0
    assert "REDIS_URL: cannot reach Redis at redis://:***@127.0.0.1:1/0" in run.stderr
    assert_no_secret(run.stdout + run.stderr, "the crawl's output")


@pytest.mark.redis
def test_no_redis_password_in_a_distributed_crawl_or_crawlstatus(
    server,
    tmp_path,
    redis_server: RedisServer,  # noqa: F811
):
    import redis

    redis.Redis.from_url(redis_server.url).config_set("requirepass", SECRET)
    url = f"redis://:{SECRET}@127.0.0.1:{redis_server.port}/0"
    seed = site(server)
    run = scrapy(
        "crawl", "traverse", "-a", f"url={seed}", *crawl_args(tmp_path, server.origin),
        "-s", f"REDIS_URL={url}", "-s", "LOG_LEVEL=DEBUG", "-s", "TRAVERSE_IDLE_TIMEOUT=1",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert server.count("/b") == 1
    assert f"at redis://:***@127.0.0.1:{redis_server.port}/0" in run.stderr  # joined
    assert_no_secret(run.stdout + run.stderr, "the worker's output")
    for extra in ((), ("--json",)):
        status = scrapy("crawlstatus", "-s", f"REDIS_URL={url}", *extra)
        assert status.returncode == 0, status.stderr
        assert "user:***@" in status.stdout
        assert_no_secret(status.stdout + status.stderr, "crawlstatus")
    wrong = scrapy("crawlstatus", "-s", f"REDIS_URL=redis://:wrong{SECRET}@127.0.0.1:1/0")
    assert wrong.returncode == 1 and "REDIS_URL" in wrong.stderr
    assert_no_secret(wrong.stdout + wrong.stderr, "crawlstatus's error")
