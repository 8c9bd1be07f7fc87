"""The optional extras of the package (pyproject.toml) and the one message for a missing one.

The core install is what a crawl of the web needs: Scrapy, the parsers, the URL library,
robots.txt. Each feature below needs its extra; it is looked up, not imported (the
import is the feature's own, when it is on), so that a setting which turns on a feature
whose extra is missing stops the crawl at start-up with one line naming the setting and
the extra to install, not with an ``ImportError`` from deep inside.
"""

from __future__ import annotations

import importlib.util

from traverse_crawl.errors import ConfigError

# extra -> the modules it installs that the feature imports (pyproject.toml's
# [project.optional-dependencies]; ``all`` is every one of them).
EXTRAS: dict[str, tuple[str, ...]] = {
    "render": ("scrapy_playwright",),
    "redis": ("redis",),
    "s3": ("botocore",),
    "warc": ("warcio", "isal"),
    "metrics": ("prometheus_client",),
}


def missing(extra: str) -> str | None:
    """The first module of ``extra`` that is not installed; None when all are."""
    for module in EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            return module
    return None


def require_extra(name: str, extra: str, what: str = "") -> None:
    """ConfigError naming ``name`` (a setting or a command) when ``extra`` is not installed."""
    module = missing(extra)
    if module is not None:
        needs = f"{what} needs" if what else "needs"
        raise ConfigError(
            name,
            f"{needs} the [{extra}] extra ({module} is not installed): "
            f"pip install 'traverse_crawl[{extra}]'",
        )
