"""A command that builds no crawler has every value a crawler of the same settings has
(docs/settings.md, "Scrapy settings with a traverse meaning"): the add-on's defaults
over Scrapy's, the user's own over the add-on's.

The crawler is built with ``scrapy.utils.test.get_crawler``; the command's settings
are what ``scrapy.cmdline`` hands a command (the project's, then the command's own
defaults and ``-s``), taken through ``take_addon_settings`` as ``ProjectCommand`` does.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from traverse_crawl.addon import PROCESS_TUNING, SETTINGS
from traverse_crawl.commands.common import ProjectCommand, take_addon_settings

ADDONS = {"ADDONS": {"traverse_crawl.Addon": 100}}
# A user's project: its own values for settings the add-on also sets.
USER = {"LOG_LEVEL": "WARNING", "DOWNLOAD_MAXSIZE": 1000, "TRAVERSE_MAX_PAGES": 3}


def command_settings(project: dict[str, Any], cmdline: dict[str, Any]) -> Settings:
    settings = Settings(project, priority="project")
    settings.setdict(ProjectCommand.default_settings, priority="command")
    settings.setdict(cmdline, priority="cmdline")
    take_addon_settings(settings)
    return settings


@pytest.mark.parametrize(
    "user",
    [{}, USER, {"TRAVERSE_PROCESS_TUNING": True}],
    ids=["defaults", "the user's values", "process tuning"],
)
def test_a_command_has_every_value_a_crawler_has(user):
    crawler = get_crawler(settings_dict={**ADDONS, **user}).settings
    command = command_settings({**ADDONS, **user}, {})
    for name in [*SETTINGS, *PROCESS_TUNING]:
        assert command[name] == crawler[name], name
    assert command.getint("DOWNLOAD_MAXSIZE") == user.get("DOWNLOAD_MAXSIZE", 32 * 1024 * 1024)
    tuned = user.get("TRAVERSE_PROCESS_TUNING", False)
    assert command["LOG_LEVEL"] == user.get("LOG_LEVEL", "INFO" if tuned else "DEBUG")


def test_the_command_line_wins_over_the_project_and_the_addon():
    command = command_settings({**ADDONS, **USER}, {"DOWNLOAD_MAXSIZE": "5", "LOG_LEVEL": "ERROR"})
    assert (command.getint("DOWNLOAD_MAXSIZE"), command["LOG_LEVEL"]) == (5, "ERROR")


def test_without_the_addon_a_command_has_scrapys_defaults_as_a_crawler_does():
    command = command_settings({}, {})
    assert command.getint("DOWNLOAD_MAXSIZE") == get_crawler().settings.getint("DOWNLOAD_MAXSIZE")
    assert command["LOG_LEVEL"] == "DEBUG"
