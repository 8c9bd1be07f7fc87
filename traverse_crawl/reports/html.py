"""``scrapy report``'s HTML: one self-contained page, inline CSS and SVG (docs/reports.md).

No script, no external stylesheet, font or image: the page makes no request
when opened from disk, and its Content-Security-Policy (``default-src 'none'``)
would block one if markup ever slipped through. Every text that came from a
crawl (URLs, seed ids, warnings, error messages) goes through ``esc``.
"""

from __future__ import annotations

from traverse_crawl.reports import svg as reportsvg
from traverse_crawl.reports.checks_section import checks_section
from traverse_crawl.reports.diff import KINDS, Change, counts
from traverse_crawl.reports.model import OTHER, ItemsSummary, SeedReport, Skipped
from traverse_crawl.reports.svg import esc

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2330;
background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#c5cad6}main{padding:8px 28px 40px}
section.seed{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:8px 22px 20px;
margin:18px 0}
h2{font-size:19px;margin:14px 0 4px;overflow-wrap:anywhere}h3{font-size:15px;margin:22px 0 8px}
.summary{color:#4a5263;margin:0 0 8px}
.totals{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px 3px 0;text-align:left;
vertical-align:top}th{color:#4a5263;font-weight:600;border-bottom:1px solid #dde1e8}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.url{overflow-wrap:anywhere}
.bar{display:inline-block;height:9px;background:#3b82c4;border-radius:2px;vertical-align:middle}
.picture{overflow:auto;border:1px solid #eef0f4;border-radius:6px;padding:4px}
svg text{font-size:11px;fill:#1d2330}svg .axis{stroke:#9aa3b5}svg .axis-label{fill:#6b7385}
.depth-chart .ok{fill:#3e9b5c}.depth-chart .fail{fill:#d1453b}
.crawl-tree{display:block;max-width:100%;height:auto}
.crawl-tree .edge{fill:none;stroke:#9aa3b5;stroke-width:1}.radial .edge{stroke-width:.5}
.crawl-tree .edge.inferred{stroke-dasharray:4 3}
.crawl-tree .node.ok{fill:#3e9b5c}.crawl-tree .node.fail{fill:#d1453b;stroke:#7d1d17}
.crawl-tree .label.fail{fill:#b3261e;font-weight:600}
.crawl-tree .node[class*=" c-"]{stroke-width:3}.crawl-tree .c-added{stroke:#2f7fd1}
.crawl-tree .c-changed{stroke:#c98a12}.crawl-tree .c-failed{stroke:#7d1d17}
.crawl-tree .c-recovered{stroke:#138a8a}
.legend .ok-dot,.legend .fail-dot{display:inline-block;width:10px;height:10px;border-radius:5px;
margin:0 4px 0 12px}
.ok-dot{background:#3e9b5c}.fail-dot{background:#d1453b}
.warnings{max-height:420px;overflow:auto}ol.warnings{font-family:ui-monospace,Menlo,monospace;font-size:12px;overflow-wrap:anywhere}
.empty,.note{color:#6b7385}
.k{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;color:#fff}
.k-added{background:#2f7fd1}.k-removed{background:#6b7385}.k-changed{background:#c98a12}
.k-failed{background:#d1453b}.k-recovered{background:#138a8a}.k-unchanged{background:#b8bfcc}
tr.c-added td{background:#eaf3fc}tr.c-removed td{background:#f1f2f5}
tr.c-changed td{background:#fdf5e4}tr.c-failed td{background:#fcebea}
tr.c-recovered td{background:#e6f4f4}
"""

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def page(seeds: list[SeedReport], sources: list[str], against: list[str] | None) -> str:
    """The whole report: a header, a table of contents, one section per seed."""
    compared = f" Compared with {', '.join(esc(s) for s in against)}." if against else ""
    contents = "".join(
        f'<li><a href="#seed-{i}">{esc(seed.seed_id)}</a> — {seed.pages} page(s), '
        f"{seed.failed} failed</li>"
        for i, seed in enumerate(seeds)
    )
    body = "".join(seed_section(i, seed) for i, seed in enumerate(seeds))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Crawl report — {len(seeds)} seed(s)</title><style>{CSS}</style></head>"
        f"<body><header><h1>Crawl report</h1><p>From {', '.join(esc(s) for s in sources)}."
        f'{compared}</p></header><main><ul class="contents">{contents}</ul>{body}</main>'
        "</body></html>\n"
    )


def seed_section(index: int, seed: SeedReport) -> str:
    state = "truncated by the page cap" if seed.truncated else "complete"
    parts = [
        f'<section class="seed" id="seed-{index}" data-seed="{esc(seed.seed_id)}">',
        f"<h2>Seed {esc(seed.seed_id)} — {esc(seed.seed_url)}</h2>",
        f'<p class="summary"><span class="pages">{seed.pages}</span> page(s), '
        f'<span class="failed">{seed.failed}</span> failed; mode {esc(seed.mode)}; {state}. '
        f"Manifest: {esc(seed.source)}</p>",
        '<div class="totals">',
        totals_table("Outcome", seed.by_outcome, "outcome"),
        totals_table("HTTP status", seed.by_status, "status"),
        totals_table("Content type", seed.by_type, "type"),
        "</div><h3>Pages per depth</h3>",
        reportsvg.depth_chart(seed.by_depth),
        '<h3>The crawl: BFS tree</h3><p class="legend note">Each page under the page that '
        'discovered it.<span class="ok-dot"></span>fetched<span class="fail-dot"></span>'
        "failed (hover a node for its URL)</p>",
        (
            '<p class="legend note">Rings: <span class="k k-added">added</span> '
            '<span class="k k-changed">changed</span> <span class="k k-failed">failed</span> '
            '<span class="k k-recovered">recovered</span> since the older crawl.</p>'
            if seed.changes is not None
            else ""
        ),
        f'<div class="picture">{reportsvg.crawl_tree(seed.nodes)}</div>',
        tree_notes(seed),
        "<h3>Largest pages</h3>",
        largest_table(seed),
        f"<h3>Warnings ({len(seed.warnings)})</h3>",
        (
            '<ol class="warnings">' + "".join(f"<li>{esc(w)}</li>" for w in seed.warnings) + "</ol>"
            if seed.warnings
            else '<p class="empty">No warnings.</p>'
        ),
    ]
    if seed.pushed_back:
        parts.append("<h3>Origins that pushed back (429, 503, block pages)</h3>")
        parts.append(totals_table("Origin", seed.pushed_back, "pushed-back", "answers"))
    if seed.skipped is not None:
        parts.append(skipped_section(seed.skipped))
    if seed.items is not None:
        parts.append(items_section(seed.items))
    if seed.checks is not None:
        parts.append(checks_section(*seed.checks))
    if seed.changes is not None:
        parts.append(changes_section(seed.changes))
    parts.append("</section>")
    return "".join(parts)


def totals_table(title: str, rows: list[tuple[str, int]], kind: str, unit: str = "pages") -> str:
    top = max((n for _, n in rows), default=1) or 1
    body = "".join(
        f'<tr><td>{esc(name)}</td><td class="n">{n}</td>'
        f'<td><span class="bar" style="width:{max(2, round(120 * n / top))}px"></span></td></tr>'
        for name, n in rows
    )
    return (
        f'<table class="totals-{kind}"><tr><th>{title}</th><th>{unit}</th><th></th></tr>'
        f"{body}</table>"
    )


def tree_notes(seed: SeedReport) -> str:
    notes = list(seed.notes)
    hidden = reportsvg.not_drawn(seed.nodes)
    if hidden:
        listed = ", ".join(f"{n} at depth {d}" for d, n in hidden)
        notes.append(
            f"The first {reportsvg.DRAW_LIMIT} pages in BFS order are drawn; "
            f"{sum(n for _, n in hidden)} more are not ({listed}). "
            "Every page is counted in the tables above."
        )
    if any(node.inferred for node in seed.nodes):
        notes.append(
            "Dashed edges: no page discovered these, because a sitemap listed them, or the "
            "manifest does not say which page did (no discoveredFrom, and no stored body "
            "to read it from). They are drawn under the seed page."
        )
    return "".join(f'<p class="note">{esc(n)}</p>' for n in notes)


def largest_table(seed: SeedReport) -> str:
    if not seed.largest:
        why = (
            "No page has a body size: the manifest has no bodySize and the store was not read."
            if not seed.sizes_known
            else "No fetched pages."
        )
        return f'<p class="empty">{why}</p>'
    rows = "".join(
        f'<tr><td class="n">{size:,}</td><td>{esc(kind)}</td><td class="url">{esc(url)}</td></tr>'
        for url, size, kind in seed.largest
    )
    return f'<table class="largest"><tr><th>bytes</th><th>type</th><th>URL</th></tr>{rows}</table>'


def skipped_section(skipped: Skipped) -> str:
    """The links the crawl did not follow (``TRAVERSE_SKIPPED``), by reason and host."""
    parts = [
        f'<h3>Links not followed (<span class="skipped-total">{skipped.total}</span>)</h3>',
        f'<p class="note">Distinct URLs linked to and not crawled, from {esc(skipped.source)}.</p>',
        '<div class="totals">',
        totals_table("Reason", skipped.by_reason, "skipped", "URLs"),
        (
            totals_table("Off-origin host", skipped.top_hosts, "skipped-hosts", "URLs")
            if skipped.top_hosts
            else ""
        ),
        "</div>",
    ]
    if skipped.unreadable:
        parts.append(f'<p class="note">{skipped.unreadable} line(s) could not be read.</p>')
    return "".join(parts)


def items_section(items: ItemsSummary) -> str:
    """The seed's extracted items: how many of each type, which fields matched nothing."""
    parts = [
        f'<h3>Extracted items (<span class="items-total">{items.total}</span>)</h3>',
        f'<p class="note">From {esc(items.source)}: {items.pages} of the manifest\'s '
        f"{items.html_pages} html page(s) yielded items.</p>",
    ]
    if not items.total:
        parts.append('<p class="empty">No items.</p>')
    else:
        parts.append('<div class="totals">')
        parts.append(totals_table("Item type", items.by_type, "items", "items"))
        parts.append(missing_table(items))
        parts.append("</div>")
    notes = []
    if items.foreign:
        notes.append(
            f"{items.foreign} item(s) come from snapshots this manifest does not name: the "
            "file may be another crawl's, or extracted before the pages were captured again "
            "(scrapy extract writes it afresh)."
        )
    if items.capped:
        notes.append(
            f"More distinct types or fields than are counted one by one: the rest are {OTHER}."
        )
    if items.unreadable:
        notes.append(f"{items.unreadable} line(s) could not be read.")
    parts.extend(f'<p class="note">{esc(n)}</p>' for n in notes)
    return "".join(parts)


def missing_table(items: ItemsSummary) -> str:
    if not items.most_missing:
        return '<p class="empty items-missing">Every field matched on every item.</p>'
    rows = "".join(
        f'<tr><td>{esc(kind)}</td><td>{esc(name)}</td><td class="n">{n}</td>'
        f'<td class="n">{f"{100 * n / of:.0f} %" if 0 < n <= of else ""}</td></tr>'
        for kind, name, n, of in items.most_missing
    )
    return (
        '<table class="items-missing"><tr><th>Type</th><th>Field most often missing</th>'
        f"<th>items</th><th>of the type</th></tr>{rows}</table>"
    )


def changes_section(changes: list[Change]) -> str:
    totals = counts(changes)
    badges = " ".join(f'<span class="k k-{k}">{totals[k]} {k}</span>' for k in KINDS)
    rows = "".join(
        f'<tr class="c-{c.kind}"><td><span class="k k-{c.kind}">{c.kind}</span></td>'
        f'<td class="url">{esc(c.url)}</td><td>{esc(c.detail)}</td></tr>'
        for c in changes
        if c.kind != "unchanged"
    )
    table = (
        f'<table class="changes"><tr><th>class</th><th>URL</th><th>what</th></tr>{rows}</table>'
        if rows
        else '<p class="empty">Nothing changed.</p>'
    )
    return f'<h3>Changes since the older crawl</h3><p class="change-counts">{badges}</p>{table}'
