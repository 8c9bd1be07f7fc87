"""Pure tables: settings parsing and validation (docs/settings.md)."""

from __future__ import annotations

import pytest

from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError


def config(**settings):
    return TraverseConfig.from_settings(settings)


def test_defaults():
    c = config()
    assert (c.mode, c.max_pages, c.max_depth, c.min_delay) == ("capture", 20, 2, 1.0)
    assert (c.retry_times, c.retry_backoff, c.retry_after_max) == (2, 0.25, 30.0)
    assert c.robots_obey and c.egress_guard and not c.revalidate
    assert c.egress_allow == frozenset() and c.render == "never"


@pytest.mark.parametrize(
    ("settings", "attr", "value"),
    [
        ({"RETRY_TIMES": "9"}, "retry_times", 5),
        ({"RETRY_TIMES": -3}, "retry_times", 0),
        ({"TRAVERSE_MIN_DELAY": "-1"}, "min_delay", 0.0),
        ({"TRAVERSE_MAX_PAGES": "3.0"}, "max_pages", 3),
        ({"TRAVERSE_MAX_PAGES": 100000}, "max_pages", 100000),
        ({"TRAVERSE_REVALIDATE": "true"}, "revalidate", True),
        ({"ROBOTSTXT_OBEY": "False"}, "robots_obey", False),
        ({"TRAVERSE_EGRESS_ALLOW": "http://127.0.0.1:8000, https://a.test"}, "egress_allow",
         frozenset({"http://127.0.0.1:8000", "https://a.test"})),
        ({"TRAVERSE_EGRESS_ALLOW": '["http://127.0.0.1:80/"]'}, "egress_allow",
         frozenset({"http://127.0.0.1"})),
        ({"TRAVERSE_DNS_TTL_MAX": "30"}, "dns_ttl_max", 30.0),
        ({"TRAVERSE_DNS_TTL_MAX": "0"}, "dns_ttl_max", 0.0),
        ({}, "dns_ttl_max", 300.0),
    ],
)  # fmt: skip
def test_values_and_clamps(settings, attr, value):
    assert getattr(config(**settings), attr) == value


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"TRAVERSE_MODE": "live-with-capture"}, "TRAVERSE_MODE"),
        ({"TRAVERSE_MAX_PAGES": "-1"}, "TRAVERSE_MAX_PAGES"),
        ({"TRAVERSE_MAX_PAGES": "1.5"}, "TRAVERSE_MAX_PAGES"),
        ({"TRAVERSE_MAX_DEPTH": "two"}, "TRAVERSE_MAX_DEPTH"),
        ({"TRAVERSE_MIN_DELAY": "soon"}, "TRAVERSE_MIN_DELAY"),
        ({"TRAVERSE_REVALIDATE": "maybe"}, "TRAVERSE_REVALIDATE"),
        ({"TRAVERSE_EGRESS_GUARD": 2}, "TRAVERSE_EGRESS_GUARD"),
        ({"TRAVERSE_ROBOTS_POLICY": "fail-closed"}, "TRAVERSE_ROBOTS_POLICY"),
        ({"TRAVERSE_RENDER": "sometimes"}, "TRAVERSE_RENDER"),
        ({"TRAVERSE_EGRESS_ALLOW": "http://h/path"}, "TRAVERSE_EGRESS_ALLOW"),
        ({"TRAVERSE_EGRESS_ALLOW": "[1, 2]"}, "TRAVERSE_EGRESS_ALLOW"),
        ({"DOWNLOAD_TIMEOUT": "0"}, "DOWNLOAD_TIMEOUT"),
        ({"TRAVERSE_STORE": ""}, "TRAVERSE_STORE"),
        ({"TRAVERSE_DNS_TTL_MAX": "five minutes"}, "TRAVERSE_DNS_TTL_MAX"),
    ],
)
def test_invalid_values_name_the_setting(settings, named):
    with pytest.raises(ConfigError) as info:
        config(**settings)
    assert info.value.name == named
    assert str(info.value).startswith(f"{named}: ")


def test_seed_ids_must_be_valid_unicode(tmp_path):
    from traverse_crawl.crawl.seeds import seeds_from_args

    seeds = tmp_path / "seeds.txt"
    seeds.write_text('{"id": "bad\\ud800", "url": "https://h.test/"}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        seeds_from_args(seeds=str(seeds))
    assert info.value.name == "seeds"
