"""Control characters from a crawl's input (a seed id here) never reach the terminal raw:
log lines at every level and ``crawlstatus`` show them escaped."""

from __future__ import annotations

import re

import pytest

from tests.support.cli import crawl_args, scrapy, scrapy_on_a_terminal
from tests.support.redisserver import redis_server  # noqa: F401  (fixture)
from tests.support.server import Reply

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
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


# A seed id and URL with raw escapes, a bell, a bidi override and rich markup.
TERMINAL_HOSTILE = (
    "evil\x1b]8;;http://example.invalid/\x07click\x1b]8;;\x07\x1b[2J\u202eabc\u202c"
    "[link=http://evil.invalid]x[/link][bold red]loud[/]:skull:"
)


def test_the_live_display_on_a_terminal_shows_a_hostile_seed_as_text(server, tmp_path):
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(6))
    pages = {f"/p{i}": Reply(body=f"page {i}", delay=0.3) for i in range(6)}  # about 3 s
    server.site({"/": links, **pages, "/x\x1b[31mred": "odd"})
    seeds = tmp_path / "seeds.txt"
    hostile_url = server.url("/") + "x\x1b[31mred?[link=http://evil.invalid]y[/link]\u202e"
    seeds.write_text(
        f"{TERMINAL_HOSTILE}\t{server.url('/')}\nsecond{TERMINAL_HOSTILE}\t{hostile_url}\n",
        encoding="utf-8",
    )
    command = [
        "crawl", "traverse", *crawl_args(tmp_path, server.origin), "-a", f"seeds={seeds}",
        "-s", "TRAVERSE_MIN_DELAY=0.2", "-s", "LOG_LEVEL=DEBUG",
    ]  # fmt: skip
    code, written = scrapy_on_a_terminal(*command, term="xterm-256color", columns=200)
    screen = written.decode("utf-8", "replace")
    assert code == 0, screen[-3000:]
    # The display was drawn with the seed's row (rich's own styling escapes are there)...
    plain = ANSI.sub("", screen)
    rows = [ln.strip() for ln in plain.split("\r") if "pages/min" in ln and "INFO" not in ln]
    assert any(row.startswith("evil\\x1b]8;;http") for row in rows), rows[-5:]
    # ...but nothing of the input reaches the terminal as a control: no hyperlink at
    # all, no injected sequence, bell or bidi override.
    assert b"\x1b]8;" not in written
    assert b"\x1b[2J" not in written and b"\x1b[31m" not in written
    assert b"\x07" not in written
    assert "\u202e" not in screen and "\u202c" not in screen
    # The markup is shown as the text it is.
    assert "[link=http://evil.invalid]x[/link]" in plain, plain[-3000:]
    assert "\\x1b]8;;http://example.invalid/\\x07click" in plain
    assert "[bold red]loud[/]:skull:" in plain and "\U0001f480" not in screen  # no emoji code
