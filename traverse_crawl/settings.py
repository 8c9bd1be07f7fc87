"""Scrapy settings of the traverse_crawl project (docs/settings.md).

Everything a crawl needs is wired by the add-on (``traverse_crawl/addon.py``), as in any
project that enables it; this module adds only what the project itself is: its name,
its spider and its commands. docs/settings.md lists every setting with its default.
"""

BOT_NAME = "traverse_crawl"
SPIDER_MODULES = ["traverse_crawl.spider"]
NEWSPIDER_MODULE = "traverse_crawl.spider"
COMMANDS_MODULE = "traverse_crawl.commands"

ADDONS = {"traverse_crawl.Addon": 100}

# This project's crawls run in a process tuned for the traverse spider (stats class,
# logging level, gc, the engine refill: docs/settings.md, TRAVERSE_PROCESS_TUNING).
TRAVERSE_PROCESS_TUNING = True
