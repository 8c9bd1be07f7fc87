"""Control characters from a crawl's input (a seed id here) never reach the terminal raw:
log lines at every level and ``crawlstatus`` show them escaped."""

from __future__ import annotations

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.support.server import Reply

HOSTILE = "evil\x1b]8;;http://example.invalid/\x07click\x1b]8;;\x07\x1b[2J\r[link=http://x]y"


def test_a_hostile_seed_id_is_escaped_in_every_log_line(server, tmp_path):
    server.site({"/": Reply(body="home", delay=1.0)})  # long enough for progress lines
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{HOSTILE}\t{server.url('/')}\n", encoding="utf-8")
    run = scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), "-a", f"seeds={seeds}",
        "-s", "LOG_LEVEL=DEBUG", "-s", "LOGSTATS_INTERVAL=0.2",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "\x1b" not in run.stderr and "\x07" not in run.stderr and "\r" not in run.stderr


@pytest.mark.redis
def test_crawlstatus_escapes_a_hostile_seed_id(server, redis_server, tmp_path):  # noqa: F811
    server.site({"/": "home"})
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{HOSTILE}\t{server.url('/')}\n", encoding="utf-8")
    url = ("-s", f"REDIS_URL={redis_server.url}")
    run = scrapy("crawl", "traverse", *crawl_args(tmp_path, server.origin), "-a",
                 f"seeds={seeds}", *url)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "\x1b" not in run.stderr
    status = scrapy("crawlstatus", *url)
    assert status.returncode == 0, status.stderr
    assert "\x1b" not in status.stdout and "\r" not in status.stdout
    assert "  evil\\x1b]8;;http://example.invalid/\\x07click" in status.stdout
