"""``scrapy settings``: Scrapy's own command, showing the settings every command runs with.

Scrapy's ``settings`` command builds no crawler, so it would show Scrapy's defaults
(``DOWNLOAD_MAXSIZE`` 1 GiB, ``LOG_LEVEL`` DEBUG) where every crawl and every command
of the project runs with the add-on's (docs/settings.md). This one is Scrapy's, with
the add-on's settings taken first, as the project's other commands take them.
"""

from __future__ import annotations

from typing import Any, ClassVar

from scrapy.commands.settings import Command as ScrapySettingsCommand

from traverse_crawl.commands.common import ProjectCommand


class Command(ProjectCommand, ScrapySettingsCommand):
    requires_project = False  # as Scrapy's: outside a project it shows Scrapy's defaults
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}
