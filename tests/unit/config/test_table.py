"""The settings table: every setting in one place, documented; the files features read."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from traverse_crawl.config.distributed import RedisConfig
from traverse_crawl.config.parsers import parse_data_path
from traverse_crawl.config.settings import DEFAULTS, TABLE, FeatureSetting, TraverseConfig
from traverse_crawl.errors import ConfigError

DOCS = Path(__file__).resolve().parents[3] / "docs" / "settings.md"


def test_every_attribute_is_one_row_of_the_table():
    """Each config attribute comes from exactly one setting, and each setting is read once."""
    rows = {(row.attr, row.name) for row in TABLE}
    assert len({name for _, name in rows}) == len(TABLE)
    attrs = {
        field.name
        for cls in (TraverseConfig, RedisConfig)
        for field in dataclasses.fields(cls)
        if field.name not in ("redis", "features")
    }
    assert sorted(attrs) == sorted(attr for attr, _ in rows)


def test_every_setting_is_documented():
    text = DOCS.read_text(encoding="utf-8")
    # A table row's first cell: one or more `NAME`s.
    cells = re.findall(r"^\| ((?:`[A-Z0-9_]+`(?:, )?)+) \|", text, flags=re.MULTILINE)
    documented = {name for cell in cells for name in re.findall(r"`([A-Z0-9_]+)`", cell)}
    assert sorted(row.name for row in TABLE if row.name not in documented) == []


def test_the_addon_defaults_are_the_defaults():
    """The add-on's values parse to what an unset setting gives; scrapy-redis's two stay unset."""
    assert "REDIS_URL" not in DEFAULTS and "REDIS_PARAMS" not in DEFAULTS
    assert DEFAULTS["TRAVERSE_CRAWL_ID"] == "traverse"
    assert TraverseConfig.from_settings(DEFAULTS) == TraverseConfig.from_settings({})


def test_only_a_file_setting_is_read_by_a_feature():
    with pytest.raises(ValueError, match="TRAVERSE_MODE is not a setting that names a file"):
        FeatureSetting("TRAVERSE_MODE", lambda name, path, features: path)


@pytest.mark.parametrize(("value", "path"), [("", None), ("  ", None), (" a.toml ", "a.toml")])
def test_a_file_setting_holds_the_path(value, path):
    assert parse_data_path("TRAVERSE_EXTRACT", value) == path


def test_a_file_setting_that_is_not_a_path():
    with pytest.raises(ConfigError, match=r"^TRAVERSE_CHECKS: expected the path of a TOML"):
        TraverseConfig.from_settings({"TRAVERSE_CHECKS": 3})


def test_a_file_no_feature_reads_is_a_program_error_not_a_skipped_check():
    """Without the feature's module (the add-on and the commands import it) the file
    would go unread: that fails loudly instead of starting a crawl without the check."""
    code = (
        "from traverse_crawl.config.settings import TraverseConfig\n"
        "TraverseConfig.from_settings({'TRAVERSE_CHECKS': 'checks.toml'})\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert "RuntimeError: TRAVERSE_CHECKS is set, but no feature reads it" in done.stderr
