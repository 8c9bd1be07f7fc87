"""No object-store credential in any log line at any level: a crawl into a bucket at
``LOG_LEVEL=DEBUG`` (botocore's own request logging included), in text and in JSON, and its
``LOG_FILE``, never show the secret key, the session token, an ``Authorization`` or
``X-Amz-Security-Token`` header or a request's signature (docs/monitoring.md, "Shipping the
logs")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.s3server import SECRET, S3Server
from tests.support.server import Server

pytestmark = pytest.mark.s3

TOKEN = "SessionT0ken-e1ab0rate-7c3f9d"
# What a request signed with the secret carries: its header, and the signature itself.
SIGNED = re.compile(r"AWS4-HMAC-SHA256 Credential=|Signature=[0-9a-f]{16}", re.IGNORECASE)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_credential_in_a_debug_crawl_into_a_bucket(
    server: Server, s3_server: S3Server, tmp_path: Path, log_format: str
):
    server.site({"/": '<a href="/a">a</a>', "/a": "<p>a</p>"})
    bucket = s3_server.new_bucket()
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", *crawl_args(tmp_path, server.origin),
        "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
        *s3_server.setting_args(), "-s", f"AWS_SESSION_TOKEN={TOKEN}",
        "-s", "LOG_LEVEL=DEBUG", "-s", f"TRAVERSE_LOG_FORMAT={log_format}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    # The crawl did talk to the bucket with those credentials, and logged at DEBUG.
    assert any(key.startswith("manifests/") for key in s3_server.objects(bucket))
    assert "DEBUG" in run.stderr
    for text, where in ((run.stderr, "stderr"), (run.stdout, "stdout")):
        assert TOKEN not in text, f"the session token is in {where}"
        assert SECRET not in text, f"the secret key is in {where}"
        assert not SIGNED.search(text), f"a signed header is in {where}"
        assert "x-amz-security-token" not in text.lower(), f"the token header is in {where}"


def test_no_credential_in_a_debug_log_file(server: Server, s3_server: S3Server, tmp_path: Path):
    server.site({"/": "<p>one page</p>"})
    bucket = s3_server.new_bucket()
    log_file = tmp_path / "crawl.log"
    run = scrapy(
        "crawl", "traverse", "-a", f"url={server.url('/')}", *crawl_args(tmp_path, server.origin),
        "-s", f"TRAVERSE_STORE=s3://{bucket}/store",
        "-s", f"TRAVERSE_MANIFEST_DIR=s3://{bucket}/manifests",
        *s3_server.setting_args(), "-s", f"AWS_SESSION_TOKEN={TOKEN}",
        "-s", "LOG_LEVEL=DEBUG", "-s", f"LOG_FILE={log_file}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    text = log_file.read_text() + run.stderr
    assert "DEBUG" in text
    assert TOKEN not in text and SECRET not in text
    assert not SIGNED.search(text)
