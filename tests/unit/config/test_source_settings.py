"""TRAVERSE_SOURCE_ID and TRAVERSE_ITEM_SOURCE_FIELD: defaults, values, refusals."""

from __future__ import annotations

import pytest

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError


def test_the_defaults_are_the_spiders_name_and_the_sourceRef_field():
    config = TraverseConfig.from_settings({})
    assert config.source_id == ""  # "": the spider's name, taken when the crawl runs
    assert config.item_source_field == "sourceRef"


def test_values_are_taken_as_given():
    config = TraverseConfig.from_settings(
        {"TRAVERSE_SOURCE_ID": "shop 2026", "TRAVERSE_ITEM_SOURCE_FIELD": "provenance"}
    )
    assert (config.source_id, config.item_source_field) == ("shop 2026", "provenance")


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"TRAVERSE_SOURCE_ID": 7}, "TRAVERSE_SOURCE_ID"),
        ({"TRAVERSE_ITEM_SOURCE_FIELD": ""}, "TRAVERSE_ITEM_SOURCE_FIELD"),
        ({"TRAVERSE_ITEM_SOURCE_FIELD": " ref"}, "TRAVERSE_ITEM_SOURCE_FIELD"),
        ({"TRAVERSE_ITEM_SOURCE_FIELD": ["sourceRef"]}, "TRAVERSE_ITEM_SOURCE_FIELD"),
    ],
)
def test_an_invalid_value_names_the_setting(settings, named):
    with pytest.raises(ConfigError) as raised:
        TraverseConfig.from_settings(settings)
    assert raised.value.name == named
    assert str(raised.value).startswith(named + ": ")
