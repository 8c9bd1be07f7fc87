"""Pure tests of the skipped log: how links are classified, and its order at any commit order."""

from __future__ import annotations

import io
import json
import random

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.links import find_links
from traverse_crawl.crawl.spool import Spool

ORIGIN = "https://h.test"
PAGE = (
    '<a href="/a">a</a><a href="https://other.test/x#f">x</a><a href="mailto:m@h.test">m</a>'
    '<a href="/b#top">b</a><a href="javascript:go()">j</a><a href="/c">c</a>'
    '<a href="https://other.test/x">again</a><a href="/a">again</a><a href="/d">d</a>'
)


def test_find_links_classifies_the_other_links_in_document_order():
    skipped: list[list] = []
    found, warnings = find_links(PAGE, ORIGIN + "/", ORIGIN, 2, skipped)
    assert found == [ORIGIN + "/a", ORIGIN + "/b"]
    assert skipped == [
        ["https://other.test/x", "off-origin", 1],
        ["mailto:m@h.test", "not-http", 1],
        ["javascript:go()", "not-http", 2],
        [ORIGIN + "/c", "link-limit", 2],
        [ORIGIN + "/d", "link-limit", 2],
    ]
    assert len(warnings) == 1  # the bound's warning once, as without a skipped list
    assert find_links(PAGE, ORIGIN + "/", ORIGIN, 2) == (found, warnings)


def site(n: int) -> dict[str, list[str]]:
    """A wide site: every page links to its children, back home, and off the origin."""
    graph = {}
    for i in range(n):
        graph[f"{ORIGIN}/{i}"] = [f"{ORIGIN}/{i}/{j}" for j in range(5)] + [
            f"{ORIGIN}/",
            f"https://off{i % 7}.test/p{i}",
        ]
    graph[ORIGIN + "/"] = [f"{ORIGIN}/{i}" for i in range(n)]
    return graph


def crawl(graph: dict[str, list[str]], spool: Spool | None, seed: int) -> str:
    frontier = Frontier("s", ORIGIN + "/", 120, 1, "live", spool=spool, skipped=True)
    pending, rng = frontier.admit(), random.Random(seed)
    while pending:
        adm = pending.pop(rng.randrange(len(pending)))  # outcomes in any order
        links = [u for u in graph.get(adm.url, []) if u.startswith(ORIGIN + "/")]
        others = [[u, "off-origin", len(links)] for u in graph.get(adm.url, []) if u not in links]
        _, more = frontier.record(adm.index, Outcome({"snapshot": {}}, links, skipped=others))
        pending.extend(more)
    assert frontier.finished and frontier.skipped is not None
    out = io.BytesIO()
    frontier.skipped.write(out, frontier.seen)
    return out.getvalue().decode()


def test_the_same_lines_at_any_commit_order_in_memory_or_spooled(tmp_path):
    graph = site(400)
    reference = crawl(graph, None, 0)
    lines = [json.loads(line) for line in reference.splitlines()]
    reasons = {line["reason"] for line in lines}
    assert reasons == {"off-origin", "max-pages", "max-depth"}
    assert len({line["url"] for line in lines}) == len(lines)  # each URL once
    spool = Spool(str(tmp_path))
    assert crawl(graph, spool, 1) == reference  # lines spilled to the spool file
    assert crawl(graph, None, 2) == reference
    spool.close()
