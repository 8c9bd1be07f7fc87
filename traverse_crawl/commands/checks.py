"""``scrapy checks``: each seed's data-quality checks again, offline (docs/checks.md).

``scrapy checks -s TRAVERSE_CHECKS=FILE [-s TRAVERSE_EXTRACT=FILE] [SEED_ID ...]`` reads
the latest manifest of each seed in ``TRAVERSE_MANIFEST_DIR`` (all, or those named)
and its items file in ``TRAVERSE_ITEMS_DIR`` (a directory or a bucket), and writes each
seed's ``<manifest name>.checks.json`` as the crawl does: the same files give the same
bytes. It prints one line per failing check and one per seed; exit status 3 when a
check failed, 1 when a checks file could not be written, 2 for a bad setting, an
unknown seed or an unreadable manifest (one ``error:`` line), else 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from scrapy.commands import ScrapyCommand

from traverse_crawl.checks.setting import CHECKS_SETTING
from traverse_crawl.commands.common import ProjectCommand, write_text
from traverse_crawl.config.settings import TraverseConfig
from traverse_crawl.errors import ConfigError
from traverse_crawl.manifests.read import ManifestError, load_all
from traverse_crawl.utils.redact import redact_text
from traverse_crawl.utils.terminal import escape_controls


class Command(ProjectCommand, ScrapyCommand):
    def syntax(self) -> str:
        return "[options] [seed id ...]"

    def short_desc(self) -> str:
        return "Run the data-quality checks again over the manifests and items files"

    def long_desc(self) -> str:
        return (
            "Evaluate TRAVERSE_CHECKS over the latest manifest and items file of each seed "
            "(all, or those given), with no network, and write each seed's checks file "
            "beside its manifest. Exit status 3 when a check failed, 1 when a checks file "
            "could not be written, 2 for a bad setting or input, else 0."
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        try:
            config = TraverseConfig.from_settings(self.settings)
            self.exitcode = run_checks(args, config, self.settings)
        except (ConfigError, ManifestError) as exc:
            write_text(sys.stderr, f"error: {redact_text(str(exc))}\n")
            self.exitcode = 2


def _line(text: str) -> str:
    return escape_controls(redact_text(text)) + "\n"


def run_checks(seed_ids: list[str], config: TraverseConfig, settings: Any = None) -> int:
    from traverse_crawl.checks.output import checks_path, failure_line, run_seed

    checks = CHECKS_SETTING.of(config)
    if checks is None:
        raise ConfigError("TRAVERSE_CHECKS", "not set: name the checks file (TOML or JSON)")
    manifests = load_all([config.manifest_dir], settings)
    if seed_ids:
        known = {manifest.seed_id for manifest in manifests}
        unknown = [seed for seed in seed_ids if seed not in known]
        if unknown:
            raise ConfigError(
                "SEED_ID", f"no manifest in {config.manifest_dir} for seed {unknown[0]!r}"
            )
        manifests = [manifest for manifest in manifests if manifest.seed_id in seed_ids]
    status = 0
    for manifest in manifests:
        target = checks_path(manifest.path)
        try:
            doc = run_seed(
                checks, manifest.path, config.items_dir, settings, manifest=manifest.data
            )
        except (OSError, ValueError) as exc:
            write_text(sys.stderr, _line(f"error: cannot check seed {manifest.seed_id!r}: {exc}"))
            status = 1
            continue
        for result in doc["results"]:
            if not result["passed"]:
                write_text(sys.stdout, _line(failure_line(result)))
        passed = len(doc["results"]) - doc["failed"]
        summary = f"seed {manifest.seed_id}: {passed} passed, {doc['failed']} failed -> {target}"
        write_text(sys.stdout, _line(summary))
        if doc["failed"] and status == 0:
            status = 3
    return status
