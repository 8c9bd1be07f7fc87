"""``scrapy crawlstatus [CRAWL_ID] -s REDIS_URL=...``: a distributed crawl at a glance.

Each seed's pages recorded, queued and in flight, and the live workers, read
from Redis (``distributed/status.py``); ``--json`` prints the same as one JSON
object. ``CRAWL_ID`` defaults to ``TRAVERSE_CRAWL_ID``. No ``REDIS_URL``, an
unreachable Redis or an unknown crawl: one ``error:`` line, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from traverse_crawl.commands.common import StoreCommand, run_safely, write_text
from traverse_crawl.config.distributed import RedisConfig, parse_crawl_id
from traverse_crawl.config.extras import require_extra
from traverse_crawl.errors import ConfigError
from traverse_crawl.fetch.exceptions import CommandFailed
from traverse_crawl.utils.redact import redact_url


class Command(StoreCommand, ScrapyCommand):
    argument = "crawl id"
    usage = "[options] [CRAWL_ID]"
    summary = "Show a distributed crawl's progress (REDIS_URL)"
    description = (
        "Per seed of the distributed crawl CRAWL_ID (default: TRAVERSE_CRAWL_ID): pages "
        "recorded, queued and in flight, URLs discovered; then the live workers. Needs "
        "-s REDIS_URL=... . --json prints the same as JSON."
    )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) > 1:
            raise UsageError("give at most one crawl id")
        try:
            require_extra("scrapy crawlstatus", "redis")
        except ConfigError as exc:
            raise UsageError(str(exc), print_help=False) from None
        run_safely(self, self.act, args[0] if args else "", opts)

    def act(self, crawl_id: str, opts: argparse.Namespace) -> None:
        # Imported here: Scrapy imports every command module at start-up, and redis is slow.
        from traverse_crawl.distributed.client import Keys, connect_sync
        from traverse_crawl.distributed.status import crawl_status, render

        try:
            config = RedisConfig.from_settings(self.settings)  # type: ignore[arg-type]
            if not config.enabled:
                raise ConfigError("REDIS_URL", "not set; give -s REDIS_URL=redis://host:port/db")
            crawl = parse_crawl_id("CRAWL_ID", crawl_id) if crawl_id else config.crawl_id
            conn = connect_sync(config)
        except ConfigError as exc:
            raise CommandFailed(str(exc)) from None
        from redis.exceptions import RedisError

        from traverse_crawl.distributed.client import DATA_ERRORS, service_error

        try:
            status = crawl_status(conn, Keys(crawl), config.lease_timeout)
        except (RedisError, *DATA_ERRORS) as exc:  # other data under the crawl's keys
            raise CommandFailed(str(service_error(config, exc, crawl))) from None
        finally:
            conn.close()
        if status is None:
            raise CommandFailed(f"no crawl {crawl!r} in Redis at {redact_url(config.url)}")
        text = json.dumps(status, ensure_ascii=False) + "\n" if opts.json else render(status)
        write_text(sys.stdout, text)
