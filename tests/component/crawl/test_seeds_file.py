"""A crawl of a seeds file, in process."""

from __future__ import annotations

import pytest_twisted


@pytest_twisted.ensureDeferred
async def test_bom_seed_is_crawled(server, crawl, tmp_path):
    server.site({"/": "home"})
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(("\ufeff" + server.url("/") + "\n").encode())
    result = await crawl(seeds=str(seeds))
    page = result.manifest["pages"][0]
    assert result.manifest["seed"]["id"] == server.url("/")
    assert "snapshot" in page["fetch"]
