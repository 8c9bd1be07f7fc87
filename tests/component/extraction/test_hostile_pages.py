"""A hostile page never stalls the crawl: thousands of matches are cut at
TRAVERSE_MAX_ITEMS_PER_PAGE, and a catastrophic regular expression is stopped by
TRAVERSE_EXTRACT_TIMEOUT while the reactor goes on; each with a page warning. Where a
page is extracted (the extraction process, or the crawl's thread with
TRAVERSE_EXTRACT_PROCESS = False) changes none of it."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted
from twisted.internet.defer import Deferred

from tests.support.server import Reply

RULES = """
[[types]]
name = "row"
each = "css:li"
[types.fields]
text = { selector = "css:::text", re = '^((a|aa)+)$' }
"""


def settings(tmp_path: Path, **more: Any) -> dict[str, Any]:
    rules = tmp_path / "extract.toml"
    rules.write_text(RULES, encoding="utf-8")
    return {
        "TRAVERSE_EXTRACT": str(rules),
        "TRAVERSE_ITEMS_DIR": str(tmp_path / "items"),
        **more,
    }


# The longest pause of the crawl's event loop these tests allow. A loop blocked by the
# hostile page would pause for the whole of it: at least the 3 s timeout, or the 2 s hard
# bound of the quadratic page. A machine running three test processes on two cores
# pauses a loop for up to ~0.7 s on its own, so the bound sits between the two.
REACTOR_GAP_MAX = 1.5


async def crawl_watching_the_reactor(
    crawl: Any, settings: dict[str, Any], **spider_args: Any
) -> tuple[Any, list[float]]:
    """The crawl's result, and the gaps between 20 ms ticks of its event loop meanwhile."""
    gaps: list[float] = []
    running = True

    async def tick() -> None:
        last = time.monotonic()
        while running:
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    try:
        result = await crawl(settings=settings, **spider_args)
    finally:
        running = False
        await Deferred.fromFuture(ticker)
    return result, gaps


WHERE = pytest.mark.parametrize("in_process", [True, False], ids=["process", "thread"])


def warnings_of(manifest: dict[str, Any], path: str) -> list[str]:
    (page,) = [p for p in manifest["pages"] if p["url"].endswith(path)]
    return list(page["fetch"].get("warnings", []))


@WHERE
@pytest_twisted.ensureDeferred
async def test_thousands_of_matches_are_cut_with_a_page_warning(
    server, crawl, tmp_path, in_process
):
    server.site({"/": '<a href="/many">m</a><ul><li>a</li></ul>',
                 "/many": "<ul>" + "<li>aa</li>" * 5000 + "</ul>"})  # fmt: skip
    result = await crawl(
        settings=settings(
            tmp_path, TRAVERSE_MAX_ITEMS_PER_PAGE=100, TRAVERSE_EXTRACT_PROCESS=in_process
        ),
        url=server.url("/"),
    )
    assert warnings_of(result.manifest, "/many") == [
        "extraction: more than 100 items on this page; the first 100 were kept "
        "(TRAVERSE_MAX_ITEMS_PER_PAGE)"
    ]
    (path,) = (tmp_path / "items").glob("*.jsonl")
    items = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [i["fields"] for i in items] == [{"text": "a"}] + [{"text": "aa"}] * 100


@WHERE
@pytest_twisted.ensureDeferred
async def test_a_catastrophic_regex_is_stopped_and_the_reactor_goes_on(
    server, crawl, tmp_path, in_process
):
    hostile = "<ul><li>" + "a" * 60 + "b</li></ul>"  # (a|aa)+$ backtracks ~fib(60) times
    server.site({"/": '<a href="/hostile">h</a><a href="/fine">f</a>',
                 "/hostile": hostile, "/fine": "<ul><li>aaa</li></ul>"})  # fmt: skip
    started = time.monotonic()
    result, gaps = await crawl_watching_the_reactor(
        crawl,
        settings(tmp_path, TRAVERSE_EXTRACT_TIMEOUT=3, TRAVERSE_EXTRACT_PROCESS=in_process),
        url=server.url("/"),
    )
    assert time.monotonic() - started < 30
    assert warnings_of(result.manifest, "/hostile") == [
        "extraction stopped after 3 s (TRAVERSE_EXTRACT_TIMEOUT); no items from this page"
    ]
    assert result.stats["extraction/page_warnings"] == 1
    # The reactor kept turning while the regular expression ran.
    assert max(gaps) < REACTOR_GAP_MAX, max(gaps)
    (path,) = (tmp_path / "items").glob("*.jsonl")
    items = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [(i["url"], i["fields"]) for i in items] == [(server.url("/fine"), {"text": "aaa"})]


@pytest_twisted.ensureDeferred
async def test_an_items_file_written_while_a_hostile_page_is_extracted_does_not_stall_the_reactor(
    server, crawl, tmp_path
):
    # The "text" seed's manifest is written (its page is plain text: nothing to extract)
    # while the extraction thread is busy with the "hostile" seed's page for seconds
    # (TRAVERSE_EXTRACT_PROCESS = False: with the process, the thread is free for it):
    # its items file waits for the thread, and the reactor goes on meanwhile.
    hostile = "<ul><li>" + "a" * 60 + "b</li></ul>"
    server.site({"/hostile": hostile,
                 "/text": Reply(body="plain", content_type="text/plain", delay=0.3)})  # fmt: skip
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"hostile\t{server.url('/hostile')}\ntext\t{server.url('/text')}\n")
    result, gaps = await crawl_watching_the_reactor(
        crawl,
        settings(tmp_path, TRAVERSE_EXTRACT_TIMEOUT=3, TRAVERSE_EXTRACT_PROCESS=False),
        seeds=str(seeds),
    )
    by_id = {m["seed"]["id"]: m for m in result.manifests()}
    assert warnings_of(by_id["hostile"], "/hostile") == [
        "extraction stopped after 3 s (TRAVERSE_EXTRACT_TIMEOUT); no items from this page"
    ]
    # Both items files written (the crawl's close waited for the thread), none lost.
    assert result.stats["extraction/items_files"] == 2
    assert "extraction/items_file_error" not in result.stats
    # The reactor kept turning while the text seed's items file waited for the thread.
    assert max(gaps) < REACTOR_GAP_MAX, max(gaps)


QUADRATIC_RULES = """
[[types]]
name = "page"
[types.fields.later]
selector = "xpath:count(//div[count(preceding::div) >= count(following::div)])"
type = "integer"
"""


@pytest_twisted.ensureDeferred
async def test_a_page_past_every_bound_inside_one_lxml_call_is_stopped(server, crawl, tmp_path):
    # One XPath quadratic in the page's nodes (about 40 s of lxml on this page): the
    # extraction cannot look at its clock inside it. The extraction process is killed
    # past the hard bound; the page gets the timeout warning, and the pages after it
    # are extracted by another process, with their items.
    divs = "".join(f"<div>{i}</div>" for i in range(3))
    server.site({"/": '<a href="/huge">h</a><a href="/one">1</a><a href="/two">2</a>' + divs,
                 "/huge": "<div>x</div>" * 60_000, "/one": divs, "/two": divs * 2})  # fmt: skip
    rules = tmp_path / "quadratic.toml"
    rules.write_text(QUADRATIC_RULES, encoding="utf-8")
    quadratic = {**settings(tmp_path, TRAVERSE_EXTRACT_TIMEOUT=1), "TRAVERSE_EXTRACT": str(rules)}
    started = time.monotonic()
    result, gaps = await crawl_watching_the_reactor(crawl, quadratic, url=server.url("/"))
    assert time.monotonic() - started < 20
    assert warnings_of(result.manifest, "/huge") == [
        "extraction stopped after 1 s (TRAVERSE_EXTRACT_TIMEOUT); no items from this page"
    ]
    assert result.stats["extraction/overdue_pages"] == 1
    assert result.stats["extraction/process_restarts"] == 1
    assert "extraction/process_lost" not in result.stats
    (path,) = (tmp_path / "items").glob("*.jsonl")
    items = [json.loads(line) for line in path.read_bytes().splitlines()]
    # Of n divs, those with at least as many before as after: n - floor((n - 1) / 2).
    assert sorted((i["url"], i["fields"]["later"]) for i in items) == sorted(
        [(server.url("/"), 2), (server.url("/one"), 2), (server.url("/two"), 3)]
    )
    assert max(gaps) < REACTOR_GAP_MAX, max(gaps)
