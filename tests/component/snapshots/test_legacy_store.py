"""A store whose snapshots record Scrapy-rewritten URLs still replays and revalidates.

``tests/support/fixtures/legacy_store`` was captured by a crawler that let Scrapy
rewrite URLs (docs/snapshots.md): its snapshots
record the URLs Scrapy's ``Request`` made of the frontier's (``/dir/x`` for
``/dir/x?``, ``%7C`` for ``|``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from tests.support import FIXTURES
from tests.support.server import Server, serve
from tests.support.tricky import ETAG, PAGE, tricky_site
from traverse_crawl.snapshots.revalidate_middleware import _same_url

FIXTURE = FIXTURES / "legacy_store"
ORIGIN = "http://127.0.0.11:8811"  # where the fixture was captured
SETTINGS = {"TRAVERSE_MAX_PAGES": 60, "TRAVERSE_MAX_DEPTH": 2}


def legacy_manifest() -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((FIXTURE / "manifest.json").read_text("utf-8"))
    return manifest


def pages_of(manifest: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What a replay or a revalidation must reproduce of each page."""
    out = []
    for page in manifest["pages"]:
        snap = {
            k: v
            for k, v in page["fetch"]["snapshot"].items()
            if k not in ("fromCache", "notModified")
        }
        out.append((page["id"], page["url"], page["depth"], page["sourceRef"], snap))
    return out


@pytest.fixture
def legacy_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(FIXTURE / "store", store)
    return store


@pytest.fixture
def legacy_origin() -> Iterator[Server]:
    """The fixture's origin, served again (its own loopback address, a fixed port)."""
    yield from serve("127.0.0.11", 8811)


def test_fixture_records_the_urls_scrapy_rewrote() -> None:
    """The fixture is what it claims: snapshot URLs differ from frontier URLs."""
    pages = {p["url"]: p["fetch"]["snapshot"] for p in legacy_manifest()["pages"]}
    assert pages[ORIGIN + "/dir/x?"]["url"] == ORIGIN + "/dir/x"
    assert pages[ORIGIN + "/dir/a|b"]["url"] == ORIGIN + "/dir/a%7Cb"
    assert ORIGIN + "/dir/p%7Cq/next" in pages  # discovered from the rewritten URL


@pytest_twisted.ensureDeferred
async def test_a_store_of_rewritten_urls_replays_its_capture(
    crawl: Any, legacy_store: Path
) -> None:
    result = await crawl(
        settings={**SETTINGS, "TRAVERSE_MODE": "replay", "TRAVERSE_STORE": str(legacy_store)},
        url=ORIGIN + PAGE,
        source_id="legacy",
    )
    manifest = result.manifest
    assert pages_of(manifest) == pages_of(legacy_manifest())
    assert all(p["fetch"]["snapshot"]["fromCache"] for p in manifest["pages"])
    assert result.stats["replay/served"] == len(manifest["pages"]) == 36
    assert "replay/miss" not in result.stats


@pytest_twisted.ensureDeferred
async def test_a_store_of_rewritten_urls_revalidates(
    crawl: Any, legacy_store: Path, legacy_origin: Server
) -> None:
    """Every page's prior, recorded under the rewritten URL, is sent its validators and kept."""
    tricky_site(legacy_origin, conditional=True)
    result = await crawl(
        settings={
            **SETTINGS,
            "TRAVERSE_REVALIDATE": True,
            "TRAVERSE_STORE": str(legacy_store),
            "TRAVERSE_EGRESS_ALLOW": [ORIGIN],
        },
        url=ORIGIN + PAGE,
        source_id="legacy",
    )
    manifest = result.manifest
    assert pages_of(manifest) == pages_of(legacy_manifest())
    assert all(p["fetch"]["snapshot"]["notModified"] for p in manifest["pages"])
    assert result.stats["revalidate/not_modified"] == 36
    conditional = [h.target for h in legacy_origin.hits if h.headers.get("If-None-Match") == ETAG]
    assert "/dir/x?" in conditional and "/dir/a|b" in conditional
    assert "/dir/final%20%5E?q=^|" in conditional  # the redirect's last hop only
    assert "/dir/r?" not in conditional


@pytest.mark.parametrize(
    ("hop", "prior", "same"),
    [
        ("http://h/x?", "http://h/x?", True),
        ("http://h/x?", "http://h/x", True),  # a URL Scrapy rewrote
        ("http://h/a|b?q=^", "http://h/a%7Cb?q=%5E", True),  # a URL Scrapy rewrote
        ("http://h/x?#f", "http://h/x?", True),
        ("http://h/x", "http://h/x?", False),
        ("http://h/a%7Cb", "http://h/a|b", False),
        ("http://h/x?", "http://h/y", False),
        ("http://h/x", None, False),
    ],
)
def test_prior_url_matching(hop: str, prior: object, same: bool) -> None:
    assert _same_url(hop, prior) is same
