"""What changed between two crawls, page by page (``scrapy diff``, docs/reports.md).

Seeds are matched by id, pages within a seed by their frontier URL, and each URL is
in one class: ``added``, ``removed``, ``changed``, ``unchanged``, ``failed`` or
``recovered`` (``classify``). The result is plain data for the text and JSON
renderings below and for the report's coloured table (``reports/model.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["added", "removed", "changed", "unchanged", "failed", "recovered"]
# The order of the counts and of the text sections.
KINDS: tuple[Kind, ...] = ("added", "removed", "changed", "failed", "recovered", "unchanged")

Page = dict[str, Any]
Manifest = dict[str, Any]


@dataclass(frozen=True)
class Change:
    seed_id: str
    url: str
    kind: Kind
    old: Page | None
    new: Page | None

    @property
    def detail(self) -> str:
        """A short reason: ``200 html → 404``, ``bodyHash 1a2b… → 3c4d…``."""
        if self.old is None or self.new is None:
            return outcome_text(self.new or self.old or {})
        before, after = outcome_text(self.old), outcome_text(self.new)
        if self.kind == "changed" and before == after:
            old_hash = self.old["fetch"]["snapshot"]["bodyHash"]
            new_hash = self.new["fetch"]["snapshot"]["bodyHash"]
            return f"{before}, bodyHash {old_hash[:12]} → {new_hash[:12]}"
        if self.kind == "unchanged":
            revalidated = "snapshot" in self.new["fetch"] and self.new["fetch"]["snapshot"].get(
                "notModified"
            )
            return after + (" (304 revalidation)" if revalidated else "")
        return f"{before} → {after}"


def outcome_text(page: Page) -> str:
    fetch = page.get("fetch", {})
    if "snapshot" in fetch:
        snapshot = fetch["snapshot"]
        return f"{snapshot.get('status', '?')} {snapshot.get('contentType', '?')}"
    error = fetch.get("error", {})
    status = error.get("status")
    return f"{error.get('kind', '?')}" + (f" {status}" if status is not None else "")


def classify(old: Page, new: Page) -> Kind:
    """The class of a URL recorded in both crawls.

    A snapshot both times: ``unchanged`` with the same ``bodyHash`` or when NEW is a
    304 revalidation (``notModified``), else ``changed``. An error both times:
    ``unchanged`` with the same kind and status, else ``changed`` (a page that stays
    broken is not news, but a new way of breaking is).
    """
    before, after = old["fetch"].get("snapshot"), new["fetch"].get("snapshot")
    if before is not None and after is not None:
        if after.get("notModified") or after["bodyHash"] == before["bodyHash"]:
            return "unchanged"
        return "changed"
    if before is not None:
        return "failed"
    if after is not None:
        return "recovered"
    old_error, new_error = old["fetch"]["error"], new["fetch"]["error"]
    same = (old_error["kind"], old_error.get("status")) == (
        new_error["kind"],
        new_error.get("status"),
    )
    return "unchanged" if same else "changed"


def diff(old: Iterable[Manifest], new: Iterable[Manifest]) -> list[Change]:
    """Every URL of either side: NEW's seeds and pages in order, then what only OLD had."""
    old_seeds = {m["seed"]["id"]: m for m in old}
    new_seeds = {m["seed"]["id"]: m for m in new}
    changes: list[Change] = []
    for seed_id in [*new_seeds, *(s for s in old_seeds if s not in new_seeds)]:
        before = {p["url"]: p for p in old_seeds.get(seed_id, {}).get("pages", ())}
        after = {p["url"]: p for p in new_seeds.get(seed_id, {}).get("pages", ())}
        for url, page in after.items():
            prior = before.get(url)
            kind = "added" if prior is None else classify(prior, page)
            changes.append(Change(seed_id, url, kind, prior, page))
        changes.extend(
            Change(seed_id, url, "removed", page, None)
            for url, page in before.items()
            if url not in after
        )
    return changes


def counts(changes: Iterable[Change]) -> dict[str, int]:
    out: dict[str, int] = dict.fromkeys(KINDS, 0)
    for change in changes:
        out[change.kind] += 1
    return out


def differs(changes: Iterable[Change]) -> bool:
    return any(change.kind != "unchanged" for change in changes)


def _outcome(page: Page | None) -> dict[str, Any] | None:
    if page is None:
        return None
    fetch = page["fetch"]
    if "error" in fetch:
        return {"error": fetch["error"]}
    out = {"snapshot": fetch["snapshot"]}
    if "sourceRef" in page:
        out["sourceRef"] = page["sourceRef"]
    return out


def to_json(changes: list[Change], bodies: dict[int, list[str]] | None = None) -> dict[str, Any]:
    """``scrapy diff --json``: the counts, then every URL with both outcomes."""
    entries = []
    for index, change in enumerate(changes):
        entry: dict[str, Any] = {
            "seed": change.seed_id,
            "url": change.url,
            "class": change.kind,
            "old": _outcome(change.old),
            "new": _outcome(change.new),
        }
        if bodies and index in bodies:
            entry["bodyDiff"] = bodies[index]
        entries.append(entry)
    return {"counts": counts(changes), "differs": differs(changes), "pages": entries}


def to_text(changes: list[Change], bodies: dict[int, list[str]] | None = None) -> str:
    """Counts, then the URLs of each class except ``unchanged``."""
    totals = counts(changes)
    lines = [", ".join(f"{totals[kind]} {kind}" for kind in KINDS)]
    several_seeds = len({change.seed_id for change in changes}) > 1
    for kind in KINDS[:-1]:
        members = [(i, c) for i, c in enumerate(changes) if c.kind == kind]
        if not members:
            continue
        lines.append(f"{kind} ({len(members)}):")
        for index, change in members:
            seed = f"[{change.seed_id}] " if several_seeds else ""
            lines.append(f"  {seed}{change.url}  {change.detail}")
            lines.extend("      " + line for line in (bodies or {}).get(index, ()))
    return "\n".join(lines) + "\n"


MAX_LINE = 160  # characters of one diff line: minified HTML is one huge line


# difflib's matcher is quadratic in the lines that differ (random short lines, 1.45 MB
# each side: about a minute). Past this many differing lines on either side, after the
# lines the two bodies share at their start and end, the middle is shown as one hunk
# that replaces it, with a line that says so.
MAX_MATCHED_LINES = 5_000


def body_diff(old: str, new: str, max_lines: int) -> list[str]:
    """A unified diff of two bodies, at most ``max_lines`` lines of ``MAX_LINE`` chars."""
    a, b = old.splitlines(), new.splitlines()
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end = 0
    while end < len(a) - start and end < len(b) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    middle_a, middle_b = a[start : len(a) - end], b[start : len(b) - end]
    if max(len(middle_a), len(middle_b)) > MAX_MATCHED_LINES:
        lines = [
            f"@@ -{start + 1},{len(middle_a)} +{start + 1},{len(middle_b)} @@",
            f"… {len(middle_a)} and {len(middle_b)} differing lines: too many to match line "
            "by line; the old lines, then the new",
            *("-" + line for line in middle_a),
            *("+" + line for line in middle_b),
        ]
    else:
        lines = list(difflib.unified_diff(a, b, "old", "new", n=1, lineterm=""))[2:]
        # (the ---/+++ header says nothing the summary line does not)
    shown = [line if len(line) <= MAX_LINE else line[:MAX_LINE] + "…" for line in lines]
    if len(shown) > max_lines:
        hidden = len(shown) - max_lines
        shown = [*shown[:max_lines], f"… {hidden} more diff line(s)"]
    return shown
