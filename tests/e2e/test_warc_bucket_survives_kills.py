"""WARC files in an S3 bucket when ``scrapy crawl`` is killed mid-capture: only whole,
valid ``.warc.gz`` objects, never a torn or ``.open`` one."""

from __future__ import annotations

import io
import subprocess
import sys
import time

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.support.cli import REPO, crawl_args, scrapy_env
from tests.support.s3server import S3Server
from tests.support.server import Reply

pytestmark = pytest.mark.s3


def test_sigkill_of_the_crawl_leaves_whole_objects_only(server, tmp_path, s3_server: S3Server):
    pages = 300
    filler = "<p>" + "lorem ipsum " * 2000 + "</p>"
    server.site({"/home.html": "".join(f'<a href="p{i}.html">{i}</a>' for i in range(pages))})
    server.site(
        # 0.1 s a page: the crawl lasts seconds, so the kill lands mid-capture even when a
        # loaded machine is slow to upload the first WARC file.
        {f"/p{i}.html": Reply(body=f"<h1>{i}</h1>{filler}", delay=0.1) for i in range(pages)}
    )
    bucket = s3_server.new_bucket()
    command = [
        sys.executable, "-m", "scrapy", "crawl", "traverse",
        "-a", f"url={server.url('/home.html')}", "-a", "source_id=big",
        "-s", f"TRAVERSE_MAX_PAGES={pages + 1}", "-s", "TRAVERSE_MAX_DEPTH=1",
        "-s", f"TRAVERSE_WARC_DIR=s3://{bucket}/warc", "-s", "TRAVERSE_WARC_MAX_SIZE=200000",
        *crawl_args(tmp_path, server.origin), *s3_server.setting_args(),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=REPO, env=scrapy_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while not s3_server.objects(bucket, "warc/"):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            assert time.monotonic() < deadline, "no WARC file was ever uploaded"
            time.sleep(0.05)
        proc.kill()  # no graceful shutdown: spider_closed never runs
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert len(server.paths()) < pages + 2  # killed mid-capture
    # The writer process sees the pipe close, closes its file and uploads it; wait for
    # the objects to stop changing.
    seen: dict[str, bytes] = {}
    deadline = time.monotonic() + 60
    while (now := s3_server.objects(bucket, "warc/")) != seen:
        assert time.monotonic() < deadline, "the uploads never settled"
        seen = now
        time.sleep(1.0)
    assert seen
    for name, data in seen.items():
        assert name.endswith(".warc.gz"), name
        types = [record.rec_type for record in ArchiveIterator(io.BytesIO(data))]
        assert types[0] == "warcinfo" and "response" in types, name
