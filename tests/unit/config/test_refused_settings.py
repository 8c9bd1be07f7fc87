"""Settings no crawl can use are refused before it starts, naming the setting."""

from __future__ import annotations

import pytest

from traverse_crawl.config.scrapy_settings import check_scrapy_settings
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"CONCURRENT_REQUESTS_PER_DOMAIN": "-1"}, "CONCURRENT_REQUESTS_PER_DOMAIN"),
        ({"CONCURRENT_REQUESTS": "0"}, "CONCURRENT_REQUESTS"),
        ({"CONCURRENT_ITEMS": "two"}, "CONCURRENT_ITEMS"),
        ({"DOWNLOAD_WARNSIZE": "1e6"}, "DOWNLOAD_WARNSIZE"),
        ({"DNS_TIMEOUT": "inf"}, "DNS_TIMEOUT"),
        ({"CLOSESPIDER_PAGECOUNT": "-3"}, "CLOSESPIDER_PAGECOUNT"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
    ],
)
def test_scrapy_settings_no_crawl_can_use_are_refused(settings, named):
    with pytest.raises(ConfigError) as caught:
        check_scrapy_settings(settings)
    assert caught.value.name == named


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"DOWNLOAD_MAXSIZE": "1e6"}, "DOWNLOAD_MAXSIZE"),
        ({"REDIRECT_MAX_TIMES": "3.0"}, "REDIRECT_MAX_TIMES"),
        ({"TRAVERSE_MIN_DELAY": "1e308"}, "TRAVERSE_MIN_DELAY"),
        ({"TRAVERSE_RETRY_BACKOFF": "1e9"}, "TRAVERSE_RETRY_BACKOFF"),
        ({"TRAVERSE_RETRY_AFTER_MAX": "1e9"}, "TRAVERSE_RETRY_AFTER_MAX"),
        ({"TRAVERSE_ROBOTS_CRAWL_DELAY_MAX": "1e9"}, "TRAVERSE_ROBOTS_CRAWL_DELAY_MAX"),
        ({"DOWNLOAD_TIMEOUT": "1e308"}, "DOWNLOAD_TIMEOUT"),
        ({"USER_AGENT": ""}, "USER_AGENT"),
        ({"USER_AGENT": "   "}, "USER_AGENT"),
        ({"TRAVERSE_MAX_LINKS_PER_PAGE": "-1"}, "TRAVERSE_MAX_LINKS_PER_PAGE"),
        ({"TRAVERSE_MAX_HEADER_SIZE": "10"}, "TRAVERSE_MAX_HEADER_SIZE"),
    ],
)
def test_traverse_config_refuses_values_that_never_fetch(settings, named):
    with pytest.raises(ConfigError) as caught:
        TraverseConfig.from_settings(settings)
    assert caught.value.name == named


def test_accepted_forms_still_parse():
    config = TraverseConfig.from_settings(
        {"DOWNLOAD_MAXSIZE": "1000000", "TRAVERSE_MIN_DELAY": "-2", "USER_AGENT": "bot/1"}
    )
    assert config.download_maxsize == 1_000_000
    assert config.min_delay == 0.0
    check_scrapy_settings({"LOG_LEVEL": "info", "CONCURRENT_REQUESTS": 16, "DNS_TIMEOUT": "60"})
