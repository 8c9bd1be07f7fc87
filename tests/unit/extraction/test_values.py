"""From a matched text to a value: what ``number``, ``integer`` and ``boolean`` accept."""

from __future__ import annotations

import pytest
import regex

from traverse_crawl.extraction.values import NoValue, convert, derive


@pytest.mark.parametrize(
    ("text", "value"),
    [("1,299.00", 1299.0), ("1299", 1299.0), ("-3.5", -3.5), ("+0.25", 0.25), (".5", 0.5),
     (" 12,345,678.9 ", 12345678.9), ("7.", 7.0), ("0", 0.0)],
)  # fmt: skip
def test_number_accepts(text, value):
    assert convert(text, "number") == value
    assert isinstance(convert(text, "number"), float)


@pytest.mark.parametrize(
    "text", ["1 299,00", "1,29", "12,34.5", "$5", "1e3", "nan", "inf", "", "1.2.3", "--1", "½"]
)
def test_number_refuses(text):
    with pytest.raises(NoValue, match="not a number"):
        convert(text, "number")


@pytest.mark.parametrize(("text", "value"), [("1,024", 1024), ("-7", -7), ("007", 7)])
def test_integer_accepts(text, value):
    assert convert(text, "integer") == value


@pytest.mark.parametrize("text", ["1.0", "1,02", "one"])
def test_integer_refuses(text):
    with pytest.raises(NoValue, match="not an integer"):
        convert(text, "integer")


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("Yes", True), ("ON", True), ("1", True),
     ("false", False), ("no", False), ("Off", False), ("0", False)],
)  # fmt: skip
def test_boolean(text, value):
    assert convert(text, "boolean") is value
    with pytest.raises(NoValue, match="not a boolean"):
        convert("maybe", "boolean")


def test_string_is_the_text_without_surrounding_whitespace():
    assert convert("  Lamp\ntwo \n", "string") == "Lamp\ntwo"


def test_re_takes_the_first_group_or_the_whole_match_then_the_type():
    base = "http://shop.test/a/b.html"
    assert derive("Price: $1,299.00", regex.compile(r"\$([0-9.,]+)"), False, "number", base) == (
        1299.0
    )
    assert derive("SKU-42 x", regex.compile(r"SKU-\d+"), False, "string", base) == "SKU-42"
    with pytest.raises(NoValue, match="does not match re"):
        derive("call us", regex.compile(r"([0-9]+)"), False, "number", base)
    assert derive(" ../c?d=1 ", None, True, "string", base) == "http://shop.test/c?d=1"
    with pytest.raises(NoValue, match="not a URL"):
        derive("http://[::1", None, True, "string", base)
