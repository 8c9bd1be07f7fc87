"""``TRAVERSE_POLICY=web`` against each challenge page of tests/support/fixtures/block_pages,
served on loopback (at 200 and at 403), beside normal pages that load the same vendors'
scripts or embed a captcha widget: the former are recorded ``blocked``, the latter
captured."""

from __future__ import annotations

from pathlib import Path

import pytest_twisted

from tests.support.server import Reply

FIXTURES = Path(__file__).parents[2] / "support" / "fixtures" / "block_pages"


@pytest_twisted.ensureDeferred
async def test_the_web_policy_knows_common_challenge_pages(server, crawl):
    blocks = {f"/block/{p.stem}": p.read_text(encoding="utf-8") for p in FIXTURES.glob("*.html")}
    normal = {
        f"/normal/{p.stem}": p.read_text(encoding="utf-8")
        for p in (FIXTURES / "normal").glob("*.html")
    }
    site: dict[str, str | Reply] = {
        path: Reply(403 if n % 2 else 200, body=body)
        for n, (path, body) in enumerate(sorted(blocks.items()))
    }
    site.update(normal)
    site["/"] = "".join(f'<a href="{p}">{p}</a>' for p in sorted(site))
    server.site(site)
    result = await crawl(
        settings={
            "TRAVERSE_POLICY": "web",
            # Each page once, without the preset's back-off and give-up, to judge them all.
            "RETRY_TIMES": 0,
            "TRAVERSE_MAX_DELAY": 0,
            "TRAVERSE_BLOCK_STOP_AFTER": 0,
            "TRAVERSE_MAX_PAGES": 100,
        },
        url=server.url("/"),
    )
    pages = {p["url"][len(server.origin) :]: p["fetch"] for p in result.manifest["pages"]}
    assert sorted(pages) == sorted([*blocks, *normal, "/"])
    assert {p for p, f in pages.items() if f.get("error", {}).get("kind") == "blocked"} == set(
        blocks
    )
    assert all("snapshot" in pages[p] for p in normal)
    assert result.stats["politeness/blocked_pages"] == len(blocks)
