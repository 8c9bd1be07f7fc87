"""A seed's check results: measured from its files, written beside its manifest.

``run_seed`` reads the seed's manifest and streams its items file (a directory or a
bucket), evaluates the checks (``checks/evaluate.py``) and writes
``<manifest name>.checks.json``. The crawl (``checks/extension.py``) and ``scrapy
checks`` both call it, so the same files give the same bytes. ``failure_line`` is the
one log line of a failing check.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from traverse_crawl.checks.evaluate import SeedEvaluator
from traverse_crawl.checks.rules import Checks
from traverse_crawl.extraction.items import items_path
from traverse_crawl.manifests.read import CHECKS_SUFFIX, read_bytes
from traverse_crawl.storage.location import is_bucket_url, open_location, write_json

SUFFIX = CHECKS_SUFFIX
NOT_WRITTEN = "the items file was not written"
NOT_THERE = "no items file"
READ_CHUNK = 1 << 20


def checks_path(manifest: str) -> str:
    """``<name>.checks.json`` beside the manifest ``<name>.json``."""
    return manifest.removesuffix(".json") + SUFFIX


def is_checks_file(name: str) -> bool:
    return name.endswith(SUFFIX)


def document(checks: Checks, seed: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    failed = sum(1 for result in results if not result["passed"])
    return {
        "seed": {"id": seed.get("id"), "url": seed.get("url")},
        "checks": checks.digest,
        "passed": not failed,
        "failed": failed,
        "results": results,
    }


def item_lines(path: str, settings: Any = None) -> Iterator[bytes] | None:
    """The lines of an items file (a path or an ``s3://`` object), streamed from a
    directory; None when it is not there. OSError when it cannot be read."""
    if is_bucket_url(path):
        data = read_bytes(path, settings)
        return None if data is None else iter(data.splitlines(keepends=True))
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return None
    return _lines(handle)


def _lines(handle: Any) -> Iterator[bytes]:
    with handle:
        yield from handle


def run_seed(
    checks: Checks,
    manifest_file: str,
    items_dir: str | None,
    settings: Any = None,
    items_written: bool = True,
    manifest: dict[str, Any] | None = None,
    evaluator: SeedEvaluator | None = None,
) -> dict[str, Any]:
    """Evaluate one seed from its manifest (at ``manifest_file``, or ``manifest`` already
    read) and its items file in ``items_dir`` (None: no items file; the items are those
    ``evaluator`` was given as they came), write its checks file, return the document.
    OSError or ValueError when the manifest cannot be read."""
    if manifest is None:
        raw = read_bytes(manifest_file, settings)
        if raw is None:
            raise FileNotFoundError(f"{manifest_file} is not there")
        manifest = json.loads(raw)
    seed = manifest.get("seed") or {}
    seed_id = str(seed.get("id"))
    evaluator = evaluator or SeedEvaluator(checks, seed_id)
    evaluated, why_not = True, ""
    if items_dir is not None:
        lines = item_lines(items_path(items_dir, seed_id), settings) if items_written else None
        evaluated, why_not = lines is not None, NOT_WRITTEN if not items_written else NOT_THERE
        if lines is not None:
            evaluator.add_lines(lines)
    evaluator.add_pages(manifest.get("pages") or [])
    results = evaluator.results(items=evaluated, why_not=why_not)
    doc = document(checks, seed, results)
    write_document(manifest_file, doc, settings)
    return doc


def write_document(manifest_file: str, doc: dict[str, Any], settings: Any = None) -> str:
    """Write the checks file beside ``manifest_file``; its path."""
    target = checks_path(manifest_file)
    directory, name = _split(target)
    location = open_location("TRAVERSE_MANIFEST_DIR", directory, settings or {})
    if not is_bucket_url(directory):
        os.makedirs(directory or ".", exist_ok=True)
    write_json(location, name, doc)
    return target


def _split(path: str) -> tuple[str, str]:
    if is_bucket_url(path):
        directory, _, name = path.rpartition("/")
        return directory, name
    return os.path.dirname(path) or ".", os.path.basename(path)


def failure_line(result: dict[str, Any]) -> str:
    """``check C of seed S failed: measured M, threshold T; e.g. URL (sourceRef R)``."""
    measured = result["measured"]
    shown = (
        "not evaluated" if measured is None and result.get("reason") else f"measured {measured!r}"
    )
    line = (
        f"check {result['check']} of seed {result['seed']!r} failed: {shown}, "
        f"threshold {json.dumps(result['threshold'], ensure_ascii=False)}"
    )
    if result.get("reason"):
        line += f" ({result['reason']})"
    examples = result.get("examples") or []
    if examples:
        first = examples[0]
        line += f"; e.g. {first.get('url')}"
        if first.get("sourceRef"):
            line += f" ({first['sourceRef']})"
    return line
