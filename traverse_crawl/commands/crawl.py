"""``scrapy crawl``, with traverse's settings and arguments checked first.

An invalid setting or argument of the ``traverse`` spider stops the command
before the crawler starts, with one line that names it and exit status 2
(CONTRACT §1), instead of a traceback. With ``LOG_FILE`` set (scrapyd jobs),
the line is also logged, since stderr is not the job's log. Other spiders run exactly as with
Scrapy's own command.
"""

from __future__ import annotations

import argparse
import logging
import os

from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from traverse_crawl.core.config import TraverseConfig
from traverse_crawl.core.errors import ConfigError
from traverse_crawl.core.seeds import seeds_from_args
from traverse_crawl.rendering.addon import check_render

logger = logging.getLogger(__name__)

_SPIDER_ARGS = ("url", "seeds", "source_id", "content_type")


class Command(ScrapyCrawlCommand):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        if settings is not None and args and args[0] == "traverse":
            try:
                check(settings, opts.spargs)
            except ConfigError as exc:
                if settings.get("LOG_FILE"):  # scrapyd: stderr is not the job log
                    logger.error("%s", exc)
                raise UsageError(str(exc), print_help=False) from None
        super().run(args, opts)


def check(settings: BaseSettings, spargs: dict[str, str]) -> None:
    """Everything that can be wrong before the first request, as a ConfigError.

    With rendering on, that includes a browser that cannot start (CONTRACT §2).
    """
    config = TraverseConfig.from_settings(settings)
    seeds_from_args(**{k: spargs[k] for k in _SPIDER_ARGS if k in spargs})
    for name, path in (
        ("TRAVERSE_MANIFEST_DIR", config.manifest_dir),
        *((("TRAVERSE_STORE", config.store),) if config.mode == "capture" else ()),
        *((("TRAVERSE_WARC_DIR", config.warc_dir),) if config.mode == "capture" else ()),
    ):
        if not path:
            continue
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise ConfigError(name, f"cannot create {path!r}: {exc.strerror or exc}") from None
    check_render(settings)
