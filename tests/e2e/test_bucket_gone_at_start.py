"""A bucket that answers the crawl command's check at start, then fails the check its
component makes a moment later (it went away in between): the same one line naming the
setting and exit status 2 as when it is missing from the start, never a traceback.

The store is reached through a fault proxy that passes the first ``HEAD`` of the bucket
and answers every later one with a 500 (tests/support/fault_proxy.py).
"""

from __future__ import annotations

import itertools

import pytest

from tests.support.cli import scrapy
from tests.support.fault_proxy import FaultProxy

pytestmark = pytest.mark.s3


def test_a_bucket_that_fails_between_two_checks_at_start_is_one_line_and_exit_2(
    server, tmp_path, s3_server
):
    server.site({"/": "<p>home</p>"})
    bucket = s3_server.new_bucket()
    heads = itertools.count()

    def second_head_fails(head: bytes) -> str | None:
        if head.startswith(f"HEAD /{bucket} ".encode()) and next(heads) >= 1:
            return "error"
        return None

    relay = FaultProxy(s3_server.port, http=True, pick=second_head_fails)
    relay.start()
    try:
        run = scrapy(
            "crawl", "traverse", "-a", f"url={server.url('/')}",
            "-s", f"TRAVERSE_STORE=s3://{bucket}/st", "-s", "TRAVERSE_S3_RETRY=0.5",
            "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
            "-s", f"TRAVERSE_EGRESS_ALLOW={server.origin}",
            *s3_server.setting_args(relay.endpoint), timeout=120,
        )  # fmt: skip
    finally:
        relay.stop()
    assert relay.counts["error"] >= 1  # the component's own check met the failure
    assert run.returncode == 2, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    assert "Task exception was never retrieved" not in run.stderr
    [line] = [x for x in run.stderr.splitlines() if "TRAVERSE_STORE" in x]
    assert "error:" in line, run.stderr[-3000:]
    assert server.hits == []  # nothing was requested
