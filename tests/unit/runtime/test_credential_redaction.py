"""An object store's secrets masked in any log line that shows one, whichever logger
wrote it, and botocore's request dumps given nothing below INFO (docs/monitoring.md,
"Shipping the logs")."""

from __future__ import annotations

import logging

import pytest

from traverse_crawl.runtime import log_redaction
from traverse_crawl.runtime.log_redaction import redact_credentials, redact_record

TOKEN = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJH"
SIGNATURE = "3f1c0a9e8b7d6c5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f"
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "line",
    [
        f"headers={{'X-Amz-Security-Token': b'{TOKEN}', 'Authorization': b'AWS4-HMAC-SHA256 "
        f"Credential=AKIDEXAMPLE/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, "
        f"Signature={SIGNATURE}'}}",
        f"GET /b/k\n\nhost:127.0.0.1\nx-amz-security-token:{TOKEN}\n",
        f"Signature:\n{SIGNATURE}",
        f"https://b.example/k?X-Amz-Signature={SIGNATURE}&X-Amz-Security-Token={TOKEN}",
        f"<SecretAccessKey>{SECRET}</SecretAccessKey><SessionToken>{TOKEN}</SessionToken>",
        f'{{"SecretAccessKey": "{SECRET}", "SessionToken": "{TOKEN}"}}',
        f"aws_secret_access_key = {SECRET}\naws_session_token = {TOKEN}",
    ],
)
def test_a_line_that_shows_a_token_a_secret_or_a_signature_has_it_masked(line):
    shown = redact_credentials(line)
    for secret in (TOKEN, SIGNATURE, SECRET):
        assert secret not in shown
    assert "***" in shown


def test_other_lines_are_unchanged():
    for line in ("Crawled (200) <GET http://h/token?signature=x>", "a page token: none", ""):
        assert redact_credentials(line) == line


def test_a_record_of_any_logger_is_masked():
    record = logging.LogRecord(
        "myproject.spiders",
        logging.INFO,
        __file__,
        1,
        "fetched %s",
        (f"?X-Amz-Security-Token={TOKEN}",),
        None,
    )
    redact_record(record)
    assert TOKEN not in record.getMessage()


def test_botocore_request_dumps_give_nothing_below_info(caplog):
    log_redaction.install()
    with caplog.at_level(logging.DEBUG):
        for name in ("botocore.endpoint", "botocore.auth", "botocore.parsers"):
            logger = logging.getLogger(name)
            logger.setLevel(logging.DEBUG)  # a level set later does not undo it
            logger.debug("Sending http request: %s", "<AWSPreparedRequest ...>")
            logger.warning("kept")
        logging.getLogger("botocore.retryhandler").debug("No retry needed.")
    assert [r.name for r in caplog.records if r.levelno == logging.DEBUG] == [
        "botocore.retryhandler"
    ]
    assert [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG] == ["kept"] * 3
