"""The extraction file: TOML and JSON in one shape, and every bad rule named at start-up."""

from __future__ import annotations

import json

import pytest

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.extraction.rules import load_rules, rules_from_bytes
from traverse_crawl.extraction.setting import EXTRACT_SETTING

TOML = b"""
[[types]]
name = "card"
paths = ["/shop/*"]
require = "css:div.listing"
each = "css:div.card"
[types.fields]
title = "css:h2::text"
price = { selector = "css:.price::text", re = '([0-9.,]+)', type = "number" }
tags  = { selector = "css:.tag::text", many = true }
link  = { selector = "xpath:.//a/@href", url = true }
"""

JSON = {
    "types": [
        {
            "name": "card",
            "paths": ["/shop/*"],
            "require": "css:div.listing",
            "each": "css:div.card",
            "fields": {
                "title": "css:h2::text",
                "price": {"selector": "css:.price::text", "re": "([0-9.,]+)", "type": "number"},
                "tags": {"selector": "css:.tag::text", "many": True},
                "link": {"selector": "xpath:.//a/@href", "url": True},
            },
        }
    ]
}


def shape(raw: bytes) -> list[tuple[object, ...]]:
    rules = rules_from_bytes(raw)
    return [
        (t.name, t.paths, t.require and t.require.written, t.each and t.each.written,
         [(f.name, f.selector.written, f.pattern and f.pattern.pattern, f.many, f.url, f.type)
          for f in t.fields])
        for t in rules.types
    ]  # fmt: skip


def test_toml_and_json_are_the_same_rules():
    assert shape(TOML) == shape(json.dumps(JSON).encode())
    assert shape(TOML) == [
        ("card", ("/shop/*",), "css:div.listing", "css:div.card",
         [("title", "css:h2::text", None, False, False, "string"),
          ("price", "css:.price::text", "([0-9.,]+)", False, False, "number"),
          ("tags", "css:.tag::text", None, True, False, "string"),
          ("link", "xpath:.//a/@href", None, False, True, "string")])
    ]  # fmt: skip


def test_the_extractor_is_the_sha256_of_the_file_bytes():
    import hashlib

    assert rules_from_bytes(TOML).extractor == "sha256:" + hashlib.sha256(TOML).hexdigest()


def field(spec: str) -> bytes:
    return b'[[types]]\nname = "card"\n[types.fields]\n' + spec.encode() + b"\n"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            field('title = "css:h2::text"\ncolour = { selector = "css:p", colour = "red" }'),
            "type 'card', field 'colour': unknown key 'colour'",
        ),
        (field('title = "css:h2[::text"'), "type 'card', field 'title': invalid CSS selector"),
        (field('title = "xpath://h2[text("'), "type 'card', field 'title': invalid XPath"),
        (
            field("price = { selector = \"css:p\", re = '([0-9' }"),
            "type 'card', field 'price': invalid regular expression '([0-9'",
        ),
        (
            field('title = "h2::text"'),
            "type 'card', field 'title': a selector is 'css:…' or 'xpath:…'",
        ),
        (
            field('n = { selector = "css:p", type = "float" }'),
            "type 'card', field 'n': 'type' must be one of",
        ),
        (field('n = { selector = "css:p", many = "yes" }'), "field 'n': 'many' must be true"),
        (field('n = { re = "x" }'), "type 'card', field 'n': 'selector' is missing"),
        (
            b'[[types]]\nname = "card"\nfield = 1\n[types.fields]\nt = "css:p"\n',
            "type 'card': unknown key 'field'",
        ),
        (
            b'[[types]]\nname = "card"\neach = "css:div["\n[types.fields]\nt = "css:p"\n',
            "type 'card', 'each': invalid CSS selector",
        ),
        (b'[[kinds]]\nname = "card"\n', "unknown key 'kinds'"),
        (b"[[types]\n", "is not valid TOML"),
        (b'{"types": [}', "is not valid JSON"),
        (b'[[types]]\nname = "card"\n', "type 'card': 'fields' must be a non-empty table"),
    ],
)
def test_a_bad_rule_names_the_setting_the_type_and_the_field(raw, message):
    with pytest.raises(ConfigError) as caught:
        rules_from_bytes(raw)
    assert caught.value.name == "TRAVERSE_EXTRACT"
    assert message in str(caught.value)
    assert str(caught.value).startswith("TRAVERSE_EXTRACT: ")


def test_the_setting_is_read_and_checked_with_the_others(tmp_path):
    good = tmp_path / "extract.toml"
    good.write_bytes(TOML)
    config = TraverseConfig.from_settings({"TRAVERSE_EXTRACT": str(good)})
    rules = EXTRACT_SETTING.of(config)
    assert rules is not None and rules.types[0].name == "card"
    assert config.extract == str(good)
    assert TraverseConfig.from_settings({}).extract is None
    assert EXTRACT_SETTING.of(TraverseConfig.from_settings({})) is None
    with pytest.raises(ConfigError, match=r"TRAVERSE_EXTRACT: cannot read"):
        TraverseConfig.from_settings({"TRAVERSE_EXTRACT": str(tmp_path / "none.toml")})
    with pytest.raises(ConfigError, match="TRAVERSE_MAX_ITEMS_PER_PAGE"):
        TraverseConfig.from_settings({"TRAVERSE_MAX_ITEMS_PER_PAGE": "0"})
    assert load_rules(str(good)).source == str(good)
