"""``TRAVERSE_CHECKS``: the checks feature reads the file the setting names.

The settings table (config/settings.py) holds the path; this reads and checks it
(``checks/rules.py``), against ``TRAVERSE_EXTRACT``'s types and fields when that is
set too, as the config is parsed: a bad file stops the crawl, and ``scrapy checks``,
with one line naming the setting and the key, before any request.
``CHECKS_SETTING.of(config)`` is the ``Checks``, None without checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from traverse_crawl.config.settings import FeatureSetting
from traverse_crawl.extraction.setting import EXTRACT_SETTING

if TYPE_CHECKING:
    from traverse_crawl.checks.rules import Checks


def read_checks(name: str, path: str, features: Mapping[str, object]) -> Checks:
    # Imported only when the setting is set: a crawl without checks loads none of it.
    from traverse_crawl.checks.rules import check_against, load_checks

    checks = load_checks(path)
    rules = EXTRACT_SETTING.among(features)  # read before: the table's order
    if rules is not None:
        check_against(checks, rules)
    return checks


CHECKS_SETTING: FeatureSetting[Checks] = FeatureSetting("TRAVERSE_CHECKS", read_checks)
