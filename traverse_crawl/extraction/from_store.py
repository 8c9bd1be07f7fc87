"""A seed's items from its manifest and the snapshot store, in manifest page order.

The items file of a seed is the concatenation, page by page in the manifest's order,
of each extracted page's lines. ``seed_chunks`` yields them, taking a page's lines from
``cached`` when the crawl has extracted it already (the same snapshot and rules give
the same bytes), else extracting the snapshot its ``sourceRef`` names. ``scrapy
extract`` uses it with no cache and an ``ExtractionPool`` (``extraction/process.py``:
the crawl's hard bound on a page); the crawl with the pages it extracted itself.

A snapshot is read only through the store's own ``sourceRef`` resolution
(``SnapshotStore.read_ref``), and its body is used only when it still matches its
``bodyHash`` (``body_matches``): a body changed since the capture is a page warning
and no items, never items under the original bytes' ``sourceRef``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from traverse_crawl.extraction.extractor import Extraction, Extractor, encode_items
from traverse_crawl.snapshots.model import Snapshot, body_matches
from traverse_crawl.snapshots.source_ref import parse_source_ref
from traverse_crawl.snapshots.store import SnapshotReadError, SnapshotStore

if TYPE_CHECKING:
    from traverse_crawl.extraction.process import ExtractionPool, PageJob

logger = logging.getLogger(__name__)

Cached = Callable[[str, str], bytes | None]  # (page id, sourceRef) -> the page's lines

UNREAD = "not in the store"
DAMAGED = "changed since the capture"
READ_FAILED = "could not be read"  # stored, perhaps, but unreadable: the cause follows


def page_key(page_id: str, source_ref: str) -> bytes:
    """A short key for a page's snapshot: the crawl keeps one per page extracted."""
    return hashlib.sha256(f"{page_id}\n{source_ref}".encode("utf-8", "surrogatepass")).digest()[:16]


def read_snapshot(store: SnapshotStore, source_ref: str) -> Snapshot | None:
    """The snapshot ``source_ref`` names, or None (a ref that is not one, or that names
    no file of the store: ``SnapshotStore.read_ref``). Its body is not checked."""
    ref = parse_source_ref(source_ref)
    return None if ref is None else store.read_ref(ref)


def read_checked(store: SnapshotStore, source_ref: str) -> Snapshot | str:
    """The snapshot ``source_ref`` names with its body checked against its hash, or
    why there is none to use: ``UNREAD``, ``DAMAGED``, or ``READ_FAILED`` and the cause."""
    try:
        snapshot = read_snapshot(store, source_ref)
    except SnapshotReadError as exc:
        return f"{READ_FAILED}: {exc}"
    if snapshot is None:
        return UNREAD
    if not body_matches(snapshot):
        return DAMAGED
    return snapshot


def problem_warning(problem: str, source_ref: str) -> str:
    """The page warning for a snapshot that cannot be extracted."""
    if problem == DAMAGED:
        return (
            f"the stored body of {source_ref} does not match its bodyHash (changed since "
            "the capture); no items from this page"
        )
    if problem.startswith(READ_FAILED):
        return f"the snapshot {source_ref} {problem}; the page's items are not in the items file"
    return f"no snapshot in the store for {source_ref}; the page's items are not in the items file"


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


# Pages (and bytes of their bodies) read ahead of their extraction by a pool.
WINDOW = 400
WINDOW_BYTES = 64 << 20

# (the page's lines, or None when its snapshot cannot be used; its warnings)
PageResult = tuple[bytes | None, list[str]]


def job_of(snapshot: Snapshot, page: dict[str, Any], seed_url: str) -> PageJob:
    return (snapshot["body"], snapshot["url"], page["url"], page.get("id"), page["sourceRef"],
            seed_url)  # fmt: skip


def seed_chunks(
    extractor: Extractor,
    store: SnapshotStore | None,
    manifest: dict[str, Any],
    cached: Cached | None = None,
    counts: dict[str, int] | None = None,
    pool: ExtractionPool | None = None,
) -> Iterator[bytes]:
    """The items file of one seed, page by page (``counts``: pages, items, and the pages
    whose snapshot is ``unread`` or ``damaged``: their items are lost, each a warning).

    With a ``pool``, the pages not cached are extracted there (the crawl's hard bound
    on a page), up to ``WINDOW`` pages or ``WINDOW_BYTES`` of bodies at a time; the
    order stays the manifest's."""
    seed = manifest.get("seed", {})
    seed_url = str(seed.get("url", ""))
    counts = counts if counts is not None else {}
    for key in ("pages", "items", "unread", "damaged"):
        counts.setdefault(key, 0)
    window: list[tuple[dict[str, Any], PageResult | Snapshot]] = []
    size = 0
    for page in manifest.get("pages", []):
        if not extractable(page):
            continue
        done = _cached(cached, page) if cached is not None else None
        found = _read(store, page, counts) if done is None else done
        if not isinstance(found, tuple) and pool is None:
            extraction = extract_snapshot(extractor, found, page, seed_url)
            found = (encode_items(extraction), extraction.warnings)
        window.append((page, found))
        if not isinstance(found, tuple):
            size += len(found["body"])
        if len(window) >= WINDOW or size >= WINDOW_BYTES:
            yield from _done(window, pool, seed, seed_url, counts)
            window, size = [], 0
    yield from _done(window, pool, seed, seed_url, counts)


def _read(
    store: SnapshotStore | None, page: dict[str, Any], counts: dict[str, int]
) -> PageResult | Snapshot:
    ref = page["sourceRef"]
    snapshot = read_checked(store, ref) if store is not None else UNREAD
    if isinstance(snapshot, str):
        counts["damaged" if snapshot == DAMAGED else "unread"] += 1
        return None, [problem_warning(snapshot, ref)]
    return snapshot


def _done(
    window: list[tuple[dict[str, Any], PageResult | Snapshot]],
    pool: ExtractionPool | None,
    seed: dict[str, Any],
    seed_url: str,
    counts: dict[str, int],
) -> Iterator[bytes]:
    """The window's pages' lines, in order, their warnings logged."""
    jobs = [job_of(found, page, seed_url) for page, found in window if not isinstance(found, tuple)]
    answers = iter(pool.extract(jobs) if pool is not None and jobs else [])
    for page, found in window:
        if isinstance(found, tuple):
            lines, warnings = found
        else:
            lines, _items, warnings = next(answers)
        for warning in warnings:
            logger.warning("%s: %s", page.get("url"), warning,
                           extra={"seed": seed.get("id"), "url": page.get("url")})  # fmt: skip
        if lines is None:
            continue
        counts["pages"] += 1
        counts["items"] += lines.count(b"\n")
        yield lines


def _cached(cached: Cached, page: dict[str, Any]) -> PageResult | None:
    lines = cached(page.get("id", ""), page["sourceRef"])
    return None if lines is None else (lines, [])
