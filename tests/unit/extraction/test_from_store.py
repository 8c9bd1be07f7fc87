"""A seed's items from its manifest and the store: the same bytes sequentially, in
extraction processes and from a cache, in manifest order; a page missing from the store
is counted, never silently dropped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support import product_site
from traverse_crawl.extraction import from_store
from traverse_crawl.extraction.extractor import Extractor
from traverse_crawl.extraction.process import ExtractionPool
from traverse_crawl.extraction.rules import rules_from_bytes
from traverse_crawl.snapshots import model
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

ORIGIN = "http://shop.test"


def captured(tmp_path: Path, copies: int = 30) -> tuple[FilesystemSnapshotStore, dict[str, Any]]:
    store = FilesystemSnapshotStore(str(tmp_path / "store"))
    pages = []
    paths = [path for _ in range(copies) for path in product_site.PAGES]
    for n, path in enumerate(paths):
        url = f"{ORIGIN}{path}?copy={n}"
        snapshot = model.build_snapshot(
            source_id=f"site::{url}", url=url, status=200, content_type="html",
            raw_body=product_site.PAGES[path].encode(),
            content_type_header="text/html; charset=utf-8",
            fetched_at=f"2026-12-02T10:00:{n % 60:02d}.{n:03d}Z",
        )  # fmt: skip
        store.put(snapshot)
        pages.append({"id": f"site::{url}", "url": url, "depth": 1,
                      "fetch": {"snapshot": model.manifest_view(snapshot)},
                      "sourceRef": build_source_ref(snapshot)})  # fmt: skip
    return store, {"seed": {"id": "site", "url": ORIGIN + "/"}, "pages": pages}


def test_sequential_pool_and_cache_give_the_same_bytes_in_manifest_order(tmp_path):
    store, manifest = captured(tmp_path)
    raw = product_site.RULES.encode()
    extractor = Extractor(rules_from_bytes(raw))
    counts: dict[str, int] = {}
    alone = b"".join(from_store.seed_chunks(extractor, store, manifest, counts=counts))
    assert counts == {"pages": 150, "items": 150, "unread": 0, "damaged": 0}
    pool = ExtractionPool(rules_from_bytes(raw), 1000, 10.0, workers=2, items=False)
    try:
        pooled = b"".join(from_store.seed_chunks(extractor, store, manifest, pool=pool))
    finally:
        pool.close()
    assert pooled == alone
    lines = alone.splitlines()
    assert [line.count(b'"type":"card"') for line in lines[:3]] == [1, 1, 1]
    by_page: dict[tuple[str, str], bytes] = {}
    for line in lines:
        item = json.loads(line)
        key = (item["pageId"], item["sourceRef"])
        by_page[key] = by_page.get(key, b"") + line + b"\n"

    def cache(page_id: str, ref: str) -> bytes:
        return by_page.get((page_id, ref), b"")

    assert b"".join(from_store.seed_chunks(extractor, None, manifest, cache)) == alone


def test_a_page_missing_from_the_store_is_counted(tmp_path, caplog):
    store, manifest = captured(tmp_path, copies=1)
    gone = manifest["pages"][1]
    Path(store.path({"sourceId": gone["id"], **gone["fetch"]["snapshot"]})).unlink()  # type: ignore[arg-type]
    counts: dict[str, int] = {}
    extractor = Extractor(rules_from_bytes(product_site.RULES.encode()))
    out = b"".join(from_store.seed_chunks(extractor, store, manifest, counts=counts))
    assert counts["unread"] == 1 and counts["pages"] == 4
    assert out.count(b"\n") == 2  # the two product pages; the listing's cards are gone
    assert "no snapshot in the store" in caplog.text
