"""Masking a URL's userinfo: one URL, text holding URLs (percent-encoded too), log records."""

from __future__ import annotations

import logging
from urllib.parse import quote

import pytest

from traverse_crawl.runtime.log_redaction import redact_record
from traverse_crawl.utils.redact import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pw@h/p?q=1", "http://user:***@h/p?q=1"),
        ("http://us%40er:s3cr%3At@h:8/", "http://us%40er:***@h:8/"),
        ("https://TOKEN@h/", "https://***@h/"),  # a lone user name may be a token
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("redis://u:s3cret@h:1/0", "redis://u:***@h:1/0"),
        ("http://h/a@b", "http://h/a@b"),
        ("http://h/", "http://h/"),
    ],
)
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert redact_text(f"<GET {url}>") == f"<GET {shown}>"


def test_percent_encoded_urls_in_text_are_masked_at_every_level():
    url = "http://us%40er:s3cr%3At@127.0.0.1:5/p"
    once = quote(url, safe="")
    twice = quote(once, safe="")
    text = f"{{'id': '{once}::{url}', 'ref': 'x:{twice}'}}"
    shown = redact_text(text)
    assert "s3cr" not in shown
    assert shown.count("***") == 3
    assert quote(redact_url(url), safe="*") in shown  # the user name is kept


def test_text_without_userinfo_is_unchanged():
    text = "contact: bot@example.com (+https://example.invalid/bot); a%40b http%3A%2F%2Fh%2Fx%40"
    assert redact_text(text) == text


def test_log_record_message_and_traceback_are_masked():
    item = {"url": "http://user:s3cret@h/"}
    record = logging.LogRecord(
        "scrapy.core.scraper", logging.DEBUG, __file__, 1,
        "Scraped from %(src)s\n%(item)s", ({"src": "<200 http://h/>", "item": item},), None,
    )  # fmt: skip
    redact_record(record)
    assert record.getMessage() == "Scraped from <200 http://h/>\n{'url': 'http://user:***@h/'}"
    try:
        raise ValueError("cannot fetch http://user:s3cret@h/")
    except ValueError:
        import sys

        failed = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    redact_record(failed)
    formatted = logging.Formatter().format(failed)
    assert "s3cret" not in formatted and "http://user:***@h/" in formatted


def test_a_source_ref_holding_a_page_id_is_masked():
    page_id = quote("http://user:s3cret@h:1/", safe="") + "::http://user:s3cret@h:1/"
    ref = "traverse-snapshot:" + quote(page_id, safe="") + "?url=http%3A%2F%2Fh%3A1%2F"
    assert "s3cret" not in redact_text(f"'sourceRef': '{ref}'")
