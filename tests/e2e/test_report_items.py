"""``scrapy report`` with a seed's items file: items per type, fields most often missing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest_twisted

from tests.support.cli import scrapy


def items_for(manifest: dict, cards_per_page: int) -> list[dict]:
    """Items as the extraction writes them, for the manifest's html pages: each page
    a ``page`` item and ``cards_per_page`` cards, every other card without a price."""
    out = []
    for page in manifest["pages"]:
        common = {"pageId": page["id"], "url": page["url"], "sourceRef": page["sourceRef"]}
        extractor = {"extractor": "sha256:" + "0" * 64, "evidence": {}}
        out.append({"type": "page", **common, "fields": {"title": "t"}, "missing": [], **extractor})
        for n in range(cards_per_page):
            missing = ["price"] if n % 2 else []
            fields = {"name": f"card {n}"} if missing else {"name": f"card {n}", "price": 1.0}
            out.append(
                {"type": "card", **common, "fields": fields, "missing": missing, **extractor}
            )
    return out


def write(path: Path, items: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")


@pytest_twisted.ensureDeferred
async def test_items_in_the_items_dir_or_beside_the_manifest_are_counted(server, crawl, tmp_path):
    server.site({"/": '<a href="/a">a</a><a href="/b">b</a>', "/a": "<p>a</p>", "/b": "<p>b</p>"})
    result = await crawl(url=server.url("/"), source_id="shop")
    (manifest_path,) = result.manifest_dir.glob("*.json")
    manifest = json.loads(manifest_path.read_text())
    name = manifest_path.name.removesuffix(".json") + ".jsonl"
    out = tmp_path / "report.html"

    # Without an items file, the report has no items section.
    run = scrapy("report", str(result.manifest_dir), "-o", str(out),
                 "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "Extracted items" not in out.read_text()

    # In TRAVERSE_ITEMS_DIR: 3 pages x (1 page item + 4 cards), 2 cards a page lack a price.
    write(tmp_path / "items" / name, items_for(manifest, 4))
    run = scrapy("report", str(result.manifest_dir), "-o", str(out),
                 "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}")  # fmt: skip
    assert run.returncode == 0, run.stderr
    html = out.read_text()
    assert '<h3>Extracted items (<span class="items-total">15</span>)</h3>' in html
    assert f"From {tmp_path / 'items' / name}: 3 of the manifest's 3 html page(s)" in html
    assert '<tr><td>card</td><td class="n">12</td>' in html
    assert '<tr><td>page</td><td class="n">3</td>' in html
    assert '<tr><td>card</td><td>price</td><td class="n">6</td><td class="n">50 %</td></tr>' in html
    assert "could not be read" not in html and "snapshots this manifest does not name" not in html

    # Beside the manifest it wins over the items dir; a stale item and a bad line are noted.
    beside = items_for(manifest, 1)
    beside.append({**beside[0], "sourceRef": beside[0]["sourceRef"][:-5] + "stale"})
    write(result.manifest_dir / name, beside)
    with (result.manifest_dir / name).open("a") as handle:
        handle.write('{"type": "card", "url"\n')
    run = scrapy("report", str(result.manifest_dir), "-o", str(out),
                 "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}")  # fmt: skip
    assert run.returncode == 0, run.stderr
    html = out.read_text()
    assert '<h3>Extracted items (<span class="items-total">7</span>)</h3>' in html
    assert f"From {result.manifest_dir / name}:" in html
    assert "1 item(s) come from snapshots this manifest does not name" in html
    assert "1 line(s) could not be read." in html
    assert "Every field matched on every item." in html  # one card a page, with its price
