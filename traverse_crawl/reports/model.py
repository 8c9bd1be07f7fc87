"""The crawl report's model: what ``scrapy report`` shows per seed (docs/reports.md).

Built from one manifest (and, with ``--against``, that seed's diff) into plain values
that ``reports/html.py`` renders: totals by outcome kind, HTTP status and content type;
ok/failed pages per depth; the BFS tree; the largest pages; the warnings; the changes;
with a ``.skipped.jsonl`` beside the manifest, the links not followed by reason; with
the seed's items file, the items per type and the fields most often missing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from traverse_crawl.reports.diff import Change, outcome_text
from traverse_crawl.reports.items_file import Line

LARGEST = 10  # rows of the "largest pages" table
TOP_HOSTS = 10  # rows of the "skipped off-origin hosts" table
TOP_MISSING = 10  # rows of the "fields most often missing" table
# Distinct item types, and (type, field) pairs, counted one by one; past this (a
# hand-made or hostile file), the rest are counted together as OTHER.
MAX_NAMES = 1_000
OTHER = "(other)"


@dataclass(frozen=True)
class Skipped:
    """A seed's skipped file (``TRAVERSE_SKIPPED``), counted: never held whole."""

    source: str
    total: int
    by_reason: list[tuple[str, int]]
    top_hosts: list[tuple[str, int]]  # off-origin links by host, most first
    unreadable: int  # lines that are not a skipped URL (a hand-edited file)


@dataclass(frozen=True)
class ItemsSummary:
    """A seed's items file, counted: never held whole."""

    source: str
    total: int
    by_type: list[tuple[str, int]]
    # type, field, items of that type missing it, items of that type; most first
    most_missing: list[tuple[str, str, int, int]]
    pages: int  # manifest pages that yielded at least one item
    html_pages: int  # manifest pages with an html snapshot: those extraction reads
    foreign: int  # items whose sourceRef is not one of the manifest's snapshots
    unreadable: int  # lines that are not an item
    capped: bool  # more distinct names than MAX_NAMES: some counted as OTHER


@dataclass(frozen=True)
class Node:
    """One page in the tree: ``parent`` is an index into the same list, -1 for a root."""

    url: str
    depth: int
    parent: int
    failed: bool
    outcome: str  # "200 html", "http-error 404": the node's tooltip
    inferred: bool = False  # no recorded discoverer: hung under the seed page
    change: str | None = None  # with --against: the diff class, when not unchanged


@dataclass
class SeedReport:
    seed_id: str
    seed_url: str
    mode: str
    truncated: bool
    source: str  # the manifest file
    by_outcome: list[tuple[str, int]]
    by_status: list[tuple[str, int]]
    by_type: list[tuple[str, int]]
    by_depth: list[tuple[int, int, int]]  # depth, ok pages, failed pages
    nodes: list[Node]
    largest: list[tuple[str, int, str]]  # url, bytes, content type
    sizes_known: bool
    warnings: list[str]
    changes: list[Change] | None = None
    notes: list[str] = field(default_factory=list)
    skipped: Skipped | None = None
    items: ItemsSummary | None = None
    checks: tuple[dict[str, Any], str] | None = None  # the .checks.json, and its file
    # Origins that pushed back: their 429, 503 and block-page answers (the back-off's causes).
    pushed_back: list[tuple[str, int]] = field(default_factory=list)

    @property
    def pages(self) -> int:
        return len(self.nodes)

    @property
    def failed(self) -> int:
        return sum(1 for node in self.nodes if node.failed)


def _ranked(counter: Counter[str]) -> list[tuple[str, int]]:
    """Most first, then by name: a stable order for tables and tests."""
    return sorted(counter.items(), key=lambda item: (-item[1], item[0]))


def skipped_summary(lines: Iterable[bytes | str], source: str) -> Skipped:
    """Counts by reason, and off-origin links by host, from a skipped file's lines."""
    reasons: Counter[str] = Counter()
    hosts: Counter[str] = Counter()
    unreadable = 0
    for line in lines:
        try:
            entry = json.loads(line)
            reason, url = entry["reason"], entry["url"]
        except (ValueError, TypeError, KeyError):
            unreadable += 1
            continue
        reasons[str(reason)] += 1
        if reason == "off-origin":
            hosts[urlsplit(str(url)).hostname or "?"] += 1
    return Skipped(
        source, sum(reasons.values()), _ranked(reasons), _ranked(hosts)[:TOP_HOSTS], unreadable
    )


def _bounded_name(counter: Counter[Any], name: Any) -> tuple[Any, bool]:
    """``name``, or OTHER once ``counter`` tracks MAX_NAMES names; and whether capped."""
    if name in counter or len(counter) < MAX_NAMES:
        return name, False
    return (OTHER if isinstance(name, str) else (OTHER, OTHER)), True


def items_summary(
    entries: Iterable[Line | str], manifest: dict[str, Any], source: str
) -> ItemsSummary:
    """Items per type and fields most often missing, one line at a time.

    ``entries`` are an items file's lines as ``reports/items_file.scan`` reads them:
    an item, or why the line is not one (counted as unreadable). An item is counted
    as the manifest's when its ``sourceRef`` is one of the manifest's pages'; the
    others are ``foreign`` (an items file of another crawl, or extracted from older
    snapshots).
    """
    refs = {p["sourceRef"] for p in manifest["pages"] if isinstance(p.get("sourceRef"), str)}
    types: Counter[str] = Counter()
    missing: Counter[tuple[str, str]] = Counter()
    yielded: set[str] = set()  # a subset of refs: bounded by the manifest
    foreign = unreadable = 0
    capped = False
    for entry in entries:
        if not isinstance(entry, Line):
            unreadable += 1
            continue
        item = entry.item
        name, over = _bounded_name(types, item["type"])
        capped |= over
        types[name] += 1
        for field_name in dict.fromkeys(str(f) for f in item.get("missing", ())):
            key, over = _bounded_name(missing, (name, field_name))
            capped |= over
            missing[key] += 1
        ref = item.get("sourceRef")
        if isinstance(ref, str) and ref in refs:
            yielded.add(ref)
        elif refs:
            foreign += 1
    # Most items first; of as many, the larger share of its type's items; then by name.
    most = sorted(
        missing.items(), key=lambda kv: (-kv[1], -kv[1] / max(types[kv[0][0]], 1), kv[0])
    )[:TOP_MISSING]
    html = sum(
        1
        for p in manifest["pages"]
        if ok(p) and p["fetch"]["snapshot"].get("contentType") == "html"
    )
    return ItemsSummary(
        source=source,
        total=sum(types.values()),
        by_type=_ranked(types),
        most_missing=[(t, f, n, types[t]) for (t, f), n in most],
        pages=len(yielded),
        html_pages=html,
        foreign=foreign,
        unreadable=unreadable,
        capped=capped,
    )


def outcome_kind(page: dict[str, Any]) -> str:
    fetch = page["fetch"]
    return "ok" if "snapshot" in fetch else str(fetch["error"]["kind"])


def status_of(page: dict[str, Any]) -> str:
    fetch = page["fetch"]
    status = (fetch.get("snapshot") or fetch["error"]).get("status")
    if "snapshot" in fetch and fetch["snapshot"].get("notModified"):
        return f"{status} (304 revalidated)"
    return "no response" if status is None else str(status)


def build_seed(
    manifest: dict[str, Any], source: str, changes: list[Change] | None = None
) -> SeedReport:
    pages: list[dict[str, Any]] = manifest["pages"]
    depth_ok: Counter[int] = Counter()
    depth_failed: Counter[int] = Counter()
    for page in pages:
        (depth_failed if "error" in page["fetch"] else depth_ok)[page["depth"]] += 1
    sized = [
        (p["url"], p["bodySize"], p["fetch"]["snapshot"].get("contentType", "?"))
        for p in pages
        if isinstance(p.get("bodySize"), int) and "snapshot" in p["fetch"]
    ]
    sized.sort(key=lambda row: (-row[1], row[0]))
    nodes = tree(pages)
    if changes is not None:
        kinds = {c.url: c.kind for c in changes if c.kind != "unchanged"}
        nodes = [replace(n, change=kinds[n.url]) if n.url in kinds else n for n in nodes]
    return SeedReport(
        seed_id=manifest["seed"]["id"],
        seed_url=str(manifest["seed"].get("url", "")),
        mode=str(manifest.get("mode", "?")),
        truncated=bool(manifest.get("truncated")),
        source=source,
        by_outcome=_ranked(Counter(outcome_kind(p) for p in pages)),
        by_status=_ranked(Counter(status_of(p) for p in pages)),
        by_type=_ranked(
            Counter(p["fetch"]["snapshot"].get("contentType", "?") for p in pages if ok(p))
        ),
        by_depth=[(d, depth_ok[d], depth_failed[d]) for d in _depths(depth_ok, depth_failed)],
        nodes=nodes,
        largest=sized[:LARGEST],
        sizes_known=bool(sized) or not any(ok(p) for p in pages),
        warnings=[str(w) for w in manifest.get("warnings", ())],
        changes=changes,
        pushed_back=_ranked(pushed_back(pages)),
    )


_PUSH_BACKS = (" after HTTP 429", " after HTTP 503", " after a block page")


def pushed_back(pages: list[dict[str, Any]]) -> Counter[str]:
    """Per origin, the answers that raised its back-off: each retry after a 429, a 503
    or a block page, and each page that ended on one (docs/crawling-real-sites.md)."""
    found: Counter[str] = Counter()
    for page in pages:
        fetch = page["fetch"]
        error = fetch.get("error") or {}
        count = sum(1 for w in fetch.get("warnings", ()) if str(w).endswith(_PUSH_BACKS))
        if error.get("status") in (429, 503) or (
            error.get("kind") == "blocked" and "status" in error
        ):
            count += 1
        if count:
            parts = urlsplit(str(page["url"]))
            found[f"{parts.scheme}://{parts.netloc}"] += count
    return found


def ok(page: dict[str, Any]) -> bool:
    return "snapshot" in page["fetch"]


def _depths(*counts: Counter[int]) -> list[int]:
    """Every depth from 0 to the deepest, as a crawl's BFS has them; a hand-made
    manifest whose depths leave gaps larger than its page count (a page "at depth 3x10^7")
    is charted at the depths it has, so the chart is never larger than the manifest."""
    present = sorted(set().union(*counts))
    if not present:
        return []
    pages = sum(sum(c.values()) for c in counts)
    contiguous = present[0] >= 0 and present[-1] < 2 * pages
    return list(range(present[-1] + 1)) if contiguous else present


def tree(pages: list[dict[str, Any]]) -> list[Node]:
    """Pages as nodes, each under its discoverer (BFS order: parents come first).

    The discoverer is the page's optional ``discoveredFrom``; a manifest without it
    (Traverse's own, or an older one) gets it from ``derive_parents`` when the store
    holds the bodies. A page whose discoverer is still unknown, or that no page
    discovered because a sitemap listed it, hangs under the seed page, drawn as a
    dashed edge (``Node.inferred``).
    """
    index = {page["url"]: i for i, page in enumerate(pages)}
    nodes = []
    for i, page in enumerate(pages):
        parent = index.get(page.get("discoveredFrom", ""), -1)
        if parent >= i:  # a hand-made manifest: never let a cycle into the layout
            parent = -1
        inferred = parent == -1 and i > 0 and page["depth"] > 0
        if inferred:
            parent = 0
        outcome = outcome_text(page)
        nodes.append(Node(page["url"], page["depth"], parent, not ok(page), outcome, inferred))
    return nodes


def derive_parents(
    pages: list[dict[str, Any]], links_of: Callable[[dict[str, Any]], Iterable[str] | None]
) -> int:
    """Fill missing ``discoveredFrom`` as the frontier did: replay link discovery in
    BFS order (``links_of`` reads a page's stored body), the first discovery wins.

    Returns how many pages got a discoverer. ``links_of`` returns None for a page
    whose body is not available.
    """
    first: dict[str, dict[str, Any]] = {}
    for page in pages:
        found = links_of(page) if ok(page) else None
        for link in found or ():
            first.setdefault(link, page)
    filled = 0
    for i, page in enumerate(pages):
        parent = first.get(page["url"])
        # A link queues its target one level down; a page that is not one level below
        # its first linker entered otherwise (a sitemap lists it at depth 1).
        if i > 0 and "discoveredFrom" not in page and parent is not None:
            if parent["depth"] == page["depth"] - 1:
                page["discoveredFrom"] = parent["url"]
                filled += 1
    return filled
