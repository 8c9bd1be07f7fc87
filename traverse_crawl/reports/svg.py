"""The report's pictures as inline SVG strings: the depth chart and the crawl tree.

Hand-written, deliberately (docs/reports.md, "Why hand-written SVG"): the crawl is
already a BFS tree with an order, and a tidy layout of such a tree is one linear pass
(``spans``), so siblings keep their BFS order and no edges cross. Every text from a
crawl goes through ``esc``.
"""

from __future__ import annotations

import math
from html import escape

from traverse_crawl.reports.model import Node
from traverse_crawl.utils.redact import redact_text

# Small crawls are drawn top-down with a label per page; larger ones radially
# (depth = ring), with each page's URL in its <title> tooltip. Beyond DRAW_LIMIT pages
# the BFS prefix is drawn (a connected subtree) and the rest is counted per depth
# below the picture.
DRAW_LIMIT = 3000  # pages drawn in the tree; the rest is summarised
LABELLED = 40  # up to this many pages: top-down, each page labelled
RADIAL_SIZE = 1000  # the radial picture's side, in SVG units (about pixels at 100 %)


def esc(text: object) -> str:
    """HTML/SVG text and attribute value: ``& < > " '`` escaped, nothing else trusted,
    a URL's password masked (a report is shared more widely than the crawl's files)."""
    return escape(redact_text(str(text)), quote=True)


def depth_chart(by_depth: list[tuple[int, int, int]]) -> str:
    """Vertical bars per depth: ok pages (green) under failed pages (red)."""
    if not by_depth:
        return '<p class="empty">No pages.</p>'
    top = max(ok + failed for _, ok, failed in by_depth) or 1
    bar, gap, height, base = 46, 18, 160, 190
    width = 50 + len(by_depth) * (bar + gap)
    parts = [
        f'<svg class="depth-chart" role="img" aria-label="pages per depth" '
        f'width="{width}" height="220" viewBox="0 0 {width} 220">',
        f'<line x1="40" y1="{base}" x2="{width - 5}" y2="{base}" class="axis"/>',
    ]
    for i, (depth, ok, failed) in enumerate(by_depth):
        x = 45 + i * (bar + gap)
        ok_h = height * ok / top
        failed_h = height * failed / top
        parts.append(
            f'<g class="depth" data-depth="{depth}" data-ok="{ok}" data-failed="{failed}">'
            f"<title>depth {depth}: {ok} ok, {failed} failed</title>"
            f'<rect class="ok" x="{x}" y="{base - ok_h:.1f}" width="{bar}" height="{ok_h:.1f}"/>'
            f'<rect class="fail" x="{x}" y="{base - ok_h - failed_h:.1f}" width="{bar}" '
            f'height="{failed_h:.1f}"/>'
            f'<text x="{x + bar / 2}" y="{base - ok_h - failed_h - 5:.1f}" '
            f'text-anchor="middle">{ok + failed}</text>'
            f'<text x="{x + bar / 2}" y="{base + 18}" text-anchor="middle">{depth}</text></g>'
        )
    parts.append(f'<text x="5" y="{base + 18}" class="axis-label">depth</text></svg>')
    return "".join(parts)


def spans(nodes: list[Node]) -> list[float]:
    """Each node's position in [0, 1): the middle of its share of the leaves.

    Each page gets a share of its parent's angle (or width) proportional to the
    leaves below it. graphviz would need a Debian package and a subprocess per
    report (``dot`` took 3.4 s on 3,000 nodes, ``twopi`` 0.2 s); networkx has no tidy
    tree layout of its own.
    """
    leaves = [0] * len(nodes)
    children: list[list[int]] = [[] for _ in nodes]
    for i in range(len(nodes) - 1, -1, -1):  # BFS order: children after parents
        leaves[i] = max(leaves[i], 1)
        parent = nodes[i].parent
        if parent >= 0:
            leaves[parent] += leaves[i]
            children[parent].append(i)
    start = [0.0] * len(nodes)
    size = [0.0] * len(nodes)
    roots = [i for i, node in enumerate(nodes) if node.parent < 0]
    total = sum(leaves[i] for i in roots) or 1
    cursor = 0.0
    for i in roots:
        start[i], size[i] = cursor, leaves[i] / total
        cursor += size[i]
    for i in range(len(nodes)):  # parents are placed before their children
        cursor = start[i]
        for child in reversed(children[i]):  # collected in reverse BFS order
            size[child] = size[i] * leaves[child] / leaves[i]
            start[child] = cursor
            cursor += size[child]
    return [start[i] + size[i] / 2 for i in range(len(nodes))]


def short_label(url: str, limit: int = 24) -> str:
    """The path and query of a same-origin URL, cut to ``limit`` characters."""
    rest = url.split("://", 1)[-1]
    path = rest[rest.find("/") :] if "/" in rest else "/"
    return path if len(path) <= limit else path[: limit - 1] + "…"


def crawl_tree(nodes: list[Node]) -> str:
    """The BFS tree: ``<circle class="node ok|fail">`` per drawn page, edges as paths."""
    drawn = nodes[:DRAW_LIMIT]
    if not drawn:
        return '<p class="empty">No pages.</p>'
    position = spans(drawn)
    labelled = len(drawn) <= LABELLED
    deepest = max(node.depth for node in drawn)
    leaves = len(drawn) - len({node.parent for node in drawn if node.parent >= 0})
    if labelled:
        width = max(640, 110 * leaves)
        height = 90 * deepest + 110

        def xy(i: int) -> tuple[float, float]:
            return 40 + position[i] * (width - 80), 40 + 90 * drawn[i].depth

        radius = 7.0
        shown = [True] * len(drawn)
    else:
        # Fits the page (CSS scales it down, never up); browser zoom shows detail.
        width = height = RADIAL_SIZE
        ring = (RADIAL_SIZE / 2 - 30) / max(deepest, 1)
        centre = RADIAL_SIZE / 2

        def xy(i: int) -> tuple[float, float]:
            angle = 2 * math.pi * position[i] - math.pi / 2
            r = ring * drawn[i].depth
            return centre + r * math.cos(angle), centre + r * math.sin(angle)

        spacing = 2 * math.pi * ring * deepest / max(leaves, 1)
        radius = round(min(5.0, max(1.6, spacing * 0.4)), 1)
        # Only the first ring is named: the site's sections, if there are few.
        first_ring = sum(1 for node in drawn if node.depth <= 1)
        shown = [node.depth <= 1 and first_ring <= LABELLED for node in drawn]
    points = [xy(i) for i in range(len(drawn))]
    rank = _rank_in_row(drawn, position)
    edges: list[str] = []
    inferred: list[str] = []
    for i, node in enumerate(drawn):
        if node.parent >= 0:
            (px, py), (x, y) = points[node.parent], points[i]
            (inferred if node.inferred else edges).append(f"M{px:.1f} {py:.1f}L{x:.1f} {y:.1f}")
    parts = [
        f'<svg class="crawl-tree {"layered" if labelled else "radial"}" role="img" '
        f'aria-label="BFS tree of the crawl" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f'<path class="edge" d="{"".join(edges)}"/>' if edges else "",
        f'<path class="edge inferred" d="{"".join(inferred)}"/>' if inferred else "",
    ]
    for i, node in enumerate(drawn):
        x, y = points[i]
        state = "fail" if node.failed else "ok"
        changed = f" c-{node.change}" if node.change else ""
        parts.append(
            f'<circle class="node {state}{changed}" cx="{x:.1f}" cy="{y:.1f}" r="{radius}" '
            f'data-depth="{node.depth}"><title>{esc(node.url)} — {esc(node.outcome)}'
            "</title></circle>"
        )
        if shown[i]:  # neighbours' labels alternate between two lines so they never touch
            below = radius + 13 + 13 * (rank[i] % 2)
            parts.append(
                f'<text class="label {state}" x="{x:.1f}" y="{y + below:.1f}" '
                f'text-anchor="middle">{esc(short_label(node.url))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _rank_in_row(nodes: list[Node], position: list[float]) -> list[int]:
    """Each node's left-to-right rank among the nodes of its depth."""
    rank = [0] * len(nodes)
    rows: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        rows.setdefault(node.depth, []).append(i)
    for row in rows.values():
        for r, i in enumerate(sorted(row, key=lambda i: position[i])):
            rank[i] = r
    return rank


def not_drawn(nodes: list[Node]) -> list[tuple[int, int]]:
    """(depth, pages) beyond ``DRAW_LIMIT``: the summary under a large tree."""
    counts: dict[int, int] = {}
    for node in nodes[DRAW_LIMIT:]:
        counts[node.depth] = counts.get(node.depth, 0) + 1
    return sorted(counts.items())
