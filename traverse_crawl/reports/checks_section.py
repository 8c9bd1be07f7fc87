"""The checks section of ``scrapy report``: each seed's ``.checks.json``, its failing
checks first, each with the pages and fields that failed and the ``sourceRef`` of each
(``scrapy snapshot SOURCEREF`` shows the stored bytes) (docs/reports.md)."""

from __future__ import annotations

import json
from typing import Any

from traverse_crawl.reports.svg import esc


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"


def checks_section(doc: dict[str, Any], source: str) -> str:
    listed = doc.get("results")
    if not isinstance(listed, list):
        return ""
    results = [r for r in listed if isinstance(r, dict)]
    failed = [r for r in results if not r.get("passed")]
    parts = [
        f'<h3>Checks (<span class="checks-failed">{len(failed)}</span> failed of '
        f"{len(results)})</h3>",
        f'<p class="note">From {esc(source)}. Open a value\'s bytes with '
        "<code>scrapy snapshot SOURCEREF</code>.</p>",
        '<table class="checks"><tr><th>Check</th><th>Measured</th><th>Threshold</th>'
        "<th>Result</th></tr>",
    ]
    for result in sorted(results, key=lambda r: bool(r.get("passed"))):
        state = "passed" if result.get("passed") else "failed"
        parts.append(
            f'<tr class="check-{state}"><td>{esc(str(result.get("check")))}</td>'
            f'<td class="n">{esc(_value(result.get("measured")))}</td>'
            f"<td>{esc(_value(result.get('threshold')))}</td><td>{state}</td></tr>"
        )
    parts.append("</table>")
    for result in failed:
        examples = result.get("examples") or []
        if not isinstance(examples, list) or not examples:
            continue
        rows = "".join(
            f"<tr><td>{esc(str(e.get('url')))}</td><td>{esc(str(e.get('field')))}</td>"
            f"<td>{esc(_value(e.get('value')))}</td>"
            f"<td>{esc(_value(e['span'])) if 'span' in e else ''}</td>"
            f'<td><code class="source-ref">{esc(str(e.get("sourceRef", "")))}</code></td></tr>'
            for e in examples
            if isinstance(e, dict)
        )
        parts.append(
            f'<table class="check-examples"><caption>{esc(str(result.get("check")))}</caption>'
            "<tr><th>URL</th><th>Field</th><th>Value</th><th>Span</th><th>sourceRef</th></tr>"
            f"{rows}</table>"
        )
    return "".join(parts)
