"""Progress per seed (``TRAVERSE_PROGRESS``): log lines when stderr is not a terminal, a live
display under a pseudo-terminal that keeps log lines whole, nothing with ``off``; with JSON
logs, no display even on a terminal: the progress is logged as JSON lines."""

from __future__ import annotations

import json
import re

from tests.support.cli import crawl_args, scrapy, scrapy_on_a_terminal
from tests.support.server import Reply, Server

LINE = re.compile(r"seed prog: (\d+)/30 pages, (\d+) queued, (\d+) errors, (\d+) pages/min")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def slow_site(server: Server) -> None:
    links = "".join(f'<a href="/p{i}">{i}</a>' for i in range(40))
    pages = {f"/p{i}": Reply(body=f"page {i}", delay=0.05) for i in range(40)}
    pages["/p3"] = Reply(status=404, body="gone", delay=0.05)
    server.site({"/": links, **pages})


def args(server: Server, tmp_path, *extra: str) -> list[str]:
    return [
        "crawl", "traverse", "-a", f"url={server.url('/')}", "-a", "source_id=prog",
        *crawl_args(tmp_path, server.origin), "-s", "TRAVERSE_MAX_PAGES=30",
        "-s", "TRAVERSE_MIN_DELAY=0.1", *extra,
    ]  # fmt: skip


def test_log_lines_every_logstats_interval_when_not_a_terminal(server, tmp_path):
    slow_site(server)
    run = scrapy(*args(server, tmp_path, "-s", "LOGSTATS_INTERVAL=0.5"))
    assert run.returncode == 0, run.stderr[-2000:]
    found = [tuple(map(int, m.groups())) for m in LINE.finditer(run.stderr)]
    assert len(found) >= 2, run.stderr[-3000:]
    recorded = [f[0] for f in found]
    assert recorded == sorted(recorded) and recorded[-1] < 30
    assert any(errors == 1 for _, _, errors, _ in found if _ is not None)
    assert all(rate > 0 for *_, rate in found[1:])
    assert all("INFO: seed prog: " in ln for ln in run.stderr.splitlines() if "seed prog:" in ln)


def test_off_means_no_progress(server, tmp_path):
    slow_site(server)
    run = scrapy(
        *args(server, tmp_path, "-s", "LOGSTATS_INTERVAL=0.5", "-s", "TRAVERSE_PROGRESS=off")
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert "seed prog:" not in run.stderr


def test_live_display_under_a_pseudo_terminal_keeps_log_lines_whole(server, tmp_path):
    slow_site(server)
    code, written = scrapy_on_a_terminal(*args(server, tmp_path))
    assert code == 0
    screen = ANSI.sub("", written.decode("utf-8", "replace")).replace("\r", "\n")
    lines = screen.splitlines()
    # The display's rows: the seed, its figures, and the final figures at the end.
    assert any(re.search(r"prog .*\d+/30 pages .*queued .*errors .*pages/min", ln) for ln in lines)
    assert any("30/30 pages" in ln and "1 errors" in ln for ln in lines), screen[-3000:]
    # Log lines printed during the display are whole lines of their own.
    for text in ("[scrapy.core.engine] INFO: Spider opened", "INFO: Spider closed (finished)"):
        assert any(ln.endswith(text) for ln in lines), text
    assert not any("queued" in ln and "INFO:" in ln for ln in lines)


def test_json_logs_on_a_terminal_draw_no_display_and_log_the_progress(server, tmp_path):
    slow_site(server)
    extra = ("-s", "TRAVERSE_LOG_FORMAT=json", "-s", "LOGSTATS_INTERVAL=0.5")
    code, written = scrapy_on_a_terminal(*args(server, tmp_path, *extra))
    assert code == 0
    screen = written.decode("utf-8")
    assert "\x1b[" not in screen and "\r\n" in screen  # no escape sequence: nothing drawn
    lines = [json.loads(line) for line in screen.splitlines()]  # every line, or it fails here
    progress = [x["message"] for x in lines if LINE.match(x["message"])]
    assert len(progress) >= 2, screen[-3000:]
    assert all(x["level"] == "INFO" for x in lines if LINE.match(x["message"]))
