"""A seed's items from its manifest and the snapshot store, in manifest page order.

The items file of a seed is the concatenation, page by page in the manifest's order,
of each extracted page's lines. ``seed_chunks`` yields them, taking a page's lines from
``cached`` when the crawl has extracted it already (the same snapshot and rules give
the same bytes), else extracting the snapshot its ``sourceRef`` names. ``scrapy
extract`` uses it with no cache; the crawl with the pages it extracted itself.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from typing import Any

from traverse_crawl.extraction.extractor import Extraction, Extractor
from traverse_crawl.extraction.items import encode_item
from traverse_crawl.extraction.rules import rules_from_bytes
from traverse_crawl.snapshots.model import Snapshot
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import (
    FilesystemSnapshotStore,
    SnapshotStore,
    deserialize,
    file_name,
    source_dir_name,
)

logger = logging.getLogger(__name__)

Cached = Callable[[str, str], bytes | None]  # (page id, sourceRef) -> the page's lines


def page_key(page_id: str, source_ref: str) -> bytes:
    """A short key for a page's snapshot: the crawl keeps one per page extracted."""
    return hashlib.sha256(f"{page_id}\n{source_ref}".encode("utf-8", "surrogatepass")).digest()[:16]


def read_snapshot(store: SnapshotStore, source_ref: str) -> Snapshot | None:
    """The snapshot ``source_ref`` names: its file is found by name (``fetchedAt`` and
    hash), so a page captured many times is not a scan of its directory."""
    ref = parse_source_ref(source_ref)
    if ref is None:
        return None
    name = file_name({"fetchedAt": ref.fetched_at, "bodyHash": ref.body_hash})  # type: ignore[typeddict-item]
    try:
        data = store.location.read(f"{source_dir_name(ref.source_id)}/{name}")
        snapshot = None if data is None else deserialize(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        snapshot = None
    if (
        snapshot is not None
        and snapshot["bodyHash"] == ref.body_hash
        and snapshot["fetchedAt"] == ref.fetched_at
    ):
        return snapshot
    if "/" in name or os.sep in name:
        return None
    return store.find(ref.source_id, ref.body_hash, ref.fetched_at)


def extractable(page: dict[str, Any]) -> bool:
    """A manifest page that has items: an ``html`` snapshot with a ``sourceRef``."""
    snapshot = page.get("fetch", {}).get("snapshot")
    return (
        isinstance(snapshot, dict)
        and snapshot.get("contentType") == "html"
        and isinstance(page.get("sourceRef"), str)
    )


def extract_snapshot(
    extractor: Extractor, snapshot: Snapshot, page: dict[str, Any], seed_url: str
) -> Extraction:
    return extractor.extract(
        snapshot["body"],
        snapshot["url"],
        page_url=page["url"],
        page_id=page.get("id"),
        source_ref=page["sourceRef"],
        seed_url=seed_url,
    )


def encode_items(extraction: Extraction) -> bytes:
    return b"".join(encode_item(item) for item in extraction.items)


# Pages extracted per task of a pool's worker, and pages in flight at once.
BATCH = 25
WINDOW = 400

# (the page's lines, or None when its snapshot is not in the store; its warnings)
PageResult = tuple[bytes | None, list[str]]
_worker: tuple[Extractor, FilesystemSnapshotStore] | None = None


def start_worker(raw: bytes, source: str, max_items: int, timeout: float, store_root: str) -> None:
    """A pool worker's initializer: the rules compiled again from the file's bytes."""
    global _worker
    rules = rules_from_bytes(raw, source)
    _worker = (Extractor(rules, max_items, timeout), FilesystemSnapshotStore(store_root))


def extract_pages(
    batch: list[tuple[dict[str, Any], str]],
    extractor: Extractor | None = None,
    store: SnapshotStore | None = None,
) -> list[PageResult]:
    """Each ``(page, seed URL)``'s lines, read from the store and extracted."""
    if extractor is None:
        assert _worker is not None
        extractor, store = _worker
    results: list[PageResult] = []
    for page, seed_url in batch:
        snapshot = read_snapshot(store, page["sourceRef"]) if store is not None else None
        if snapshot is None:
            results.append((None, []))
            continue
        extraction = extract_snapshot(extractor, snapshot, page, seed_url)
        results.append((encode_items(extraction), extraction.warnings))
    return results


def seed_chunks(
    extractor: Extractor,
    store: SnapshotStore | None,
    manifest: dict[str, Any],
    cached: Cached | None = None,
    counts: dict[str, int] | None = None,
    pool: Executor | None = None,
) -> Iterator[bytes]:
    """The items file of one seed, page by page (``counts``: pages, items, unread).

    With a ``pool`` (of processes started by ``start_worker``), the pages not cached
    are extracted there, a window at a time; the order stays the manifest's."""
    seed = manifest.get("seed", {})
    seed_url = str(seed.get("url", ""))
    counts = counts if counts is not None else {}
    for key in ("pages", "items", "unread"):
        counts.setdefault(key, 0)
    pages = [page for page in manifest.get("pages", []) if extractable(page)]
    for at in range(0, len(pages), WINDOW):
        window = pages[at : at + WINDOW]
        results: list[PageResult | None] = [
            None if cached is None else _cached(cached, page) for page in window
        ]
        todo = [(page, seed_url) for page, result in zip(window, results, strict=True)
                if result is None]  # fmt: skip
        batches = [todo[i : i + BATCH] for i in range(0, len(todo), BATCH)]
        if pool is None:
            done = [extract_pages(batch, extractor, store) for batch in batches]
        else:
            done = list(pool.map(extract_pages, batches))
        extracted = iter(result for batch in done for result in batch)
        for page, result in zip(window, results, strict=True):
            lines, warnings = result if result is not None else next(extracted)
            for warning in warnings:
                logger.warning("%s: %s", page.get("url"), warning)
            if lines is None:
                counts["unread"] += 1
                logger.warning(
                    "%s: no snapshot in the store for %s; the page's items are not in "
                    "the items file", page.get("url"), page["sourceRef"],
                    extra={"seed": seed.get("id"), "url": page.get("url")},
                )  # fmt: skip
                continue
            counts["pages"] += 1
            counts["items"] += lines.count(b"\n")
            yield lines


def _cached(cached: Cached, page: dict[str, Any]) -> PageResult | None:
    lines = cached(page.get("id", ""), page["sourceRef"])
    return None if lines is None else (lines, [])
