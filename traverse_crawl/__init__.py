"""traverse_crawl: a polite, reproducible same-origin BFS crawler built on Scrapy.

The public API is ``__all__`` (docs/settings.md, "Public API"); every other name is
private and may change. Each name is imported on first use, so importing the package,
as its child processes do, loads nothing of Scrapy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from traverse_crawl.version import __version__

if TYPE_CHECKING:
    from traverse_crawl.addon import Addon
    from traverse_crawl.checks.evaluate import SeedEvaluator
    from traverse_crawl.checks.rules import Checks, load_checks
    from traverse_crawl.crawl.items import PageItem
    from traverse_crawl.errors import ErrorKind, FetchError
    from traverse_crawl.extraction.extractor import Extraction, Extractor
    from traverse_crawl.extraction.items import ExtractedItem
    from traverse_crawl.snapshots.model import Snapshot
    from traverse_crawl.snapshots.source_ref import SourceRef, build_source_ref, parse_source_ref
    from traverse_crawl.snapshots.store import (
        FilesystemSnapshotStore,
        SnapshotStore,
        open_snapshot_store,
    )
    from traverse_crawl.spider import TraverseSpider

# Where each public name is defined.
_MODULES = {
    "Addon": "traverse_crawl.addon",
    "Checks": "traverse_crawl.checks.rules",
    "load_checks": "traverse_crawl.checks.rules",
    "SeedEvaluator": "traverse_crawl.checks.evaluate",
    "TraverseSpider": "traverse_crawl.spider",
    "PageItem": "traverse_crawl.crawl.items",
    "FetchError": "traverse_crawl.errors",
    "ErrorKind": "traverse_crawl.errors",
    "ExtractedItem": "traverse_crawl.extraction.items",
    "Extraction": "traverse_crawl.extraction.extractor",
    "Extractor": "traverse_crawl.extraction.extractor",
    "FilesystemSnapshotStore": "traverse_crawl.snapshots.store",
    "SnapshotStore": "traverse_crawl.snapshots.store",
    "open_snapshot_store": "traverse_crawl.snapshots.store",
    "Snapshot": "traverse_crawl.snapshots.model",
    "SourceRef": "traverse_crawl.snapshots.source_ref",
    "build_source_ref": "traverse_crawl.snapshots.source_ref",
    "parse_source_ref": "traverse_crawl.snapshots.source_ref",
}

__all__ = [
    "Addon",
    "Checks",
    "ErrorKind",
    "ExtractedItem",
    "Extraction",
    "Extractor",
    "FetchError",
    "FilesystemSnapshotStore",
    "PageItem",
    "SeedEvaluator",
    "Snapshot",
    "SnapshotStore",
    "SourceRef",
    "TraverseSpider",
    "__version__",
    "build_source_ref",
    "load_checks",
    "open_snapshot_store",
    "parse_source_ref",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, *(name for name in globals() if name.startswith("__"))})
