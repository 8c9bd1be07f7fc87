"""``TRAVERSE_EXTRACT``: the extraction feature reads the file the setting names.

The settings table (config/settings.py) holds the path; this reads and compiles it
(``extraction/rules.py``) as the config is parsed, so a bad file stops the crawl, and
every command that reads it, with one line naming the setting, the item type and the
field, before any request. ``EXTRACT_SETTING.of(config)`` is the compiled ``Rules``,
None without extraction.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from traverse_crawl.config.settings import FeatureSetting

if TYPE_CHECKING:
    from traverse_crawl.extraction.rules import Rules


def read_rules(name: str, path: str, features: Mapping[str, object]) -> Rules:
    # Imported only when the setting is set: a crawl without extraction (and every
    # child process) loads none of it (regex, tomllib: 0.1 s).
    from traverse_crawl.extraction.rules import load_rules

    return load_rules(path)


EXTRACT_SETTING: FeatureSetting[Rules] = FeatureSetting("TRAVERSE_EXTRACT", read_rules)
