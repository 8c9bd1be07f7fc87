"""JsonFormatter: one JSON object per record, with the page it is about."""

from __future__ import annotations

import json
import logging
import sys

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse

from traverse_crawl.operations.json_log import JsonFormatter

REQUEST = Request("http://example.com/a", meta={"traverse_seed": 0})


def record(msg, args=None, extra=None, exc_info=None, name="x"):
    if isinstance(args, dict):
        args = (args,)  # as logger.info(msg, {...}) passes it
    made = logging.LogRecord(name, logging.INFO, __file__, 1, msg, args, exc_info)
    made.created = 0.25  # 1970-01-01T00:00:00.250Z
    for key, value in (extra or {}).items():
        setattr(made, key, value)
    return made


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        (record("plain"), {"message": "plain"}),
        (
            record("page %s", ("u",), {"seed": "s", "url": "http://e/"}),
            {"message": "page u", "seed": "s", "url": "http://e/"},
        ),
        (
            record("Crawled %(request)s", {"request": REQUEST}),
            {"message": "Crawled <GET http://example.com/a>", "url": "http://example.com/a"},
        ),
        (
            record(
                "Scraped from %(src)s",
                {"src": HtmlResponse("http://example.com/b", request=REQUEST), "item": {}},
            ),
            {"message": "Scraped from <200 http://example.com/b>", "url": "http://example.com/b"},
        ),
        (
            record("Scraped from %(src)s", {"src": "refused", "item": {"url": "http://e/c"}}),
            {"message": "Scraped from refused", "url": "http://e/c"},
        ),
        (record("%d items", ("x",)), {"message": "%d items ('x',)"}),  # a bad format: kept
        (record("line\nnext \udc80"), {"message": "line\nnext \udc80"}),
    ],
)
def test_fields(made, expected):
    line = JsonFormatter().format(made)
    assert "\n" not in line and line.isascii()
    assert json.loads(line) == {
        "time": "1970-01-01T00:00:00.250Z",
        "level": "INFO",
        "logger": "x",
        **expected,
    }


def test_exception_is_in_exc():
    try:
        raise ZeroDivisionError("division by zero")
    except ZeroDivisionError:
        made = record("failed", exc_info=sys.exc_info())
    line = json.loads(JsonFormatter().format(made))
    assert line["message"] == "failed"
    assert line["exc"].startswith("Traceback (most recent call last):")
    assert line["exc"].endswith("ZeroDivisionError: division by zero")
