"""TRAVERSE_METRICS_PORT and TRAVERSE_METRICS_HOST: defaults, values, refusals."""

from __future__ import annotations

import pytest

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError


def test_off_by_default_and_on_loopback():
    config = TraverseConfig.from_settings({})
    assert (config.metrics_port, config.metrics_host) == (0, "127.0.0.1")


def test_values_are_taken_as_given():
    config = TraverseConfig.from_settings(
        {"TRAVERSE_METRICS_PORT": "9410", "TRAVERSE_METRICS_HOST": "0.0.0.0"}
    )
    assert (config.metrics_port, config.metrics_host) == (9410, "0.0.0.0")


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"TRAVERSE_METRICS_PORT": "-1"}, "TRAVERSE_METRICS_PORT"),
        ({"TRAVERSE_METRICS_PORT": "65536"}, "TRAVERSE_METRICS_PORT"),
        ({"TRAVERSE_METRICS_PORT": "http"}, "TRAVERSE_METRICS_PORT"),
        ({"TRAVERSE_METRICS_HOST": " "}, "TRAVERSE_METRICS_HOST"),
        ({"TRAVERSE_METRICS_HOST": 127}, "TRAVERSE_METRICS_HOST"),
    ],
)
def test_an_invalid_value_names_the_setting(settings, named):
    with pytest.raises(ConfigError) as raised:
        TraverseConfig.from_settings(settings)
    assert raised.value.name == named
    assert str(raised.value).startswith(named + ": ")
