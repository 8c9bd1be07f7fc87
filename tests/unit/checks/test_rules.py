"""The checks file: its shape, and every bad key named at start-up with TRAVERSE_CHECKS."""

from __future__ import annotations

import json

import pytest

from traverse_crawl.checks.rules import checks_from_bytes
from traverse_crawl.checks.setting import CHECKS_SETTING
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError

EXTRACT = b"""
[[types]]
name = "product"
each = "css:div.card"
[types.fields]
title = "css:h2::text"
price = { selector = "css:.price::text", type = "number" }
sku = "css:.sku::text"
"""

CHECKS = b"""
[crawl]
min_pages = 50
max_share = { http-error = 0.05, blocked = 0.0, timeout = 0.02 }
[items.product]
min_items = 100
coverage = { price = 0.98, title = 1.0 }
distinct = ["sku"]
[items.product.values]
price = { min = 0.01, max = 100000 }
sku = { pattern = '^[A-Z0-9-]+$' }
"""


def test_toml_and_json_give_the_same_checks() -> None:
    toml = checks_from_bytes(CHECKS)
    data = {
        "crawl": {"min_pages": 50,
                  "max_share": {"http-error": 0.05, "blocked": 0, "timeout": 0.02}},
        "items": {"product": {"min_items": 100, "coverage": {"price": 0.98, "title": 1.0},
                              "distinct": ["sku"], "values": {"price": {"min": 0.01, "max": 100000},
                                                              "sku": {"pattern": "^[A-Z0-9-]+$"}}}},
    }  # fmt: skip
    from_json = checks_from_bytes(json.dumps(data).encode())
    assert toml.min_pages == from_json.min_pages == 50
    assert toml.max_share == from_json.max_share
    assert [k for k, _ in toml.max_share] == ["http-error", "blocked", "timeout"]
    (product,) = toml.types
    assert product.min_items == 100
    assert product.coverage == (("price", 0.98), ("title", 1.0))
    assert product.distinct == ("sku",)
    assert [v.threshold() for v in product.values] == [
        {"min": 0.01, "max": 100000},
        {"pattern": "^[A-Z0-9-]+$"},
    ]
    assert toml.digest.startswith("sha256:")


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b"[crawl]\nmax_pages = 3\n", "'crawl.max_pages'"),
        (b"colour = 1\n", "'colour'"),
        (b"[crawl]\nmax_share = { flaky = 0.1 }\n", "crawl.max_share.flaky"),
        (b"[crawl]\nmax_share = { timeout = 1.5 }\n", "crawl.max_share.timeout"),
        (b"[crawl]\nmax_share = { timeout = -0.1 }\n", "crawl.max_share.timeout"),
        (b"[crawl]\nmin_pages = -1\n", "crawl.min_pages"),
        (b"[items.product]\ncoverage = { price = 2 }\n", "items.product.coverage.price"),
        (b"[items.product]\nmin_item = 3\n", "'items.product.min_item'"),
        (b"[items.product.values]\nsku = { pattern = '([' }\n", "items.product.values.sku.pattern"),
        (b"[items.product.values]\nsku = { regex = 'a' }\n", "'items.product.values.sku.regex'"),
        (b"[items.product.values]\nprice = { min = 'a' }\n", "items.product.values.price.min"),
        (b"not toml = = =", "not valid TOML"),
    ],
)
def test_a_bad_file_names_the_setting_and_the_key(tmp_path, text: bytes, named: str) -> None:
    path = tmp_path / "checks.toml"
    path.write_bytes(text)
    with pytest.raises(ConfigError) as caught:
        TraverseConfig.from_settings({"TRAVERSE_CHECKS": str(path)})
    message = str(caught.value)
    assert message.startswith("TRAVERSE_CHECKS: ")
    assert named in message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (b"[items.card]\nmin_items = 1\n", "items.card"),
        (b"[items.product]\ncoverage = { colour = 0.5 }\n", "items.product.coverage.colour"),
        (b"[items.product]\ndistinct = ['id']\n", "items.product.distinct.id"),
        (b"[items.product.values]\nweight = { min = 1 }\n", "items.product.values.weight"),
    ],
)
def test_types_and_fields_are_those_of_the_extraction_file(tmp_path, text, named) -> None:
    (tmp_path / "extract.toml").write_bytes(EXTRACT)
    (tmp_path / "checks.toml").write_bytes(text)
    settings = {
        "TRAVERSE_EXTRACT": str(tmp_path / "extract.toml"),
        "TRAVERSE_CHECKS": str(tmp_path / "checks.toml"),
    }
    with pytest.raises(ConfigError) as caught:
        TraverseConfig.from_settings(settings)
    assert str(caught.value).startswith(f"TRAVERSE_CHECKS: {named}")
    # Without an extraction file the same checks are read as they are.
    del settings["TRAVERSE_EXTRACT"]
    assert CHECKS_SETTING.of(TraverseConfig.from_settings(settings)) is not None


def test_a_good_file_against_its_extraction_file(tmp_path) -> None:
    (tmp_path / "extract.toml").write_bytes(EXTRACT)
    (tmp_path / "checks.toml").write_bytes(CHECKS)
    config = TraverseConfig.from_settings(
        {"TRAVERSE_EXTRACT": str(tmp_path / "extract.toml"),
         "TRAVERSE_CHECKS": str(tmp_path / "checks.toml")}
    )  # fmt: skip
    checks = CHECKS_SETTING.of(config)
    assert checks is not None and checks.types[0].name == "product"


def test_an_unreadable_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"^TRAVERSE_CHECKS: cannot read"):
        TraverseConfig.from_settings({"TRAVERSE_CHECKS": str(tmp_path / "none.toml")})
