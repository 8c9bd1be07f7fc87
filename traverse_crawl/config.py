"""The crawl's ``TraverseConfig``, parsed once per crawler and shared by components."""

from __future__ import annotations

from scrapy.crawler import Crawler

from traverse_crawl.core.config import TraverseConfig

_ATTR = "_traverse_config"


def get_config(crawler: Crawler) -> TraverseConfig:
    """Parse the settings on first use; raises ``ConfigError`` naming a bad setting."""
    config = getattr(crawler, _ATTR, None)
    if config is None:
        config = TraverseConfig.from_settings(crawler.settings)
        setattr(crawler, _ATTR, config)
    return config
