"""A crawl's persistent state as records: what to keep, when to refuse, how to resume.

Records are plain JSON (``jobdir/journal.py`` stores them); resuming replays every
page record through a fresh ``Frontier`` built with the current budgets, so their
order does not matter (docs/architecture.md, "State and durability").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.scope import policy_defaults
from traverse_crawl.crawl.seeds import Seed, seed_dict, seed_from_dict
from traverse_crawl.errors import ConfigError
from traverse_crawl.storage.location import canonical

# The records:
# - ``{"t": "header", "format": FORMAT, "version": VERSION, "seeds": [...], "mode",
#   "store", "max_pages", "max_depth"}`` — first, once: what defines the crawl;
# - ``{"t": "budget", "max_pages", "max_depth"}`` — a resume with larger budgets;
# - ``{"t": "page", "s": seed key, "i": index, "u": URL, "d": depth, "fetch", "ref"?,
#   "links"?, "off"?, "size"?, "store"?, "skip"?}`` — one page outcome, kept once its
#   snapshot is stored ("skip": its links not on the origin, with TRAVERSE_SKIPPED);
# - ``{"t": "sitemaps", "s": seed key, "urls", "warnings", "max_pages"}`` — a seed's
#   sitemap URLs (``TRAVERSE_SITEMAPS``), read with that page budget.
FORMAT = "traverse_crawl-jobdir"
VERSION = 1


@dataclass(frozen=True)
class Budgets:
    max_pages: int
    max_depth: int


@dataclass(frozen=True)
class Plan:
    """What a run does with its JOBDIR: the seeds, and the records to append first."""

    seeds: list[Seed]
    resumed: bool
    append: list[dict[str, Any]]


def header(
    seeds: list[Seed], mode: str, store: str, budgets: Budgets, policy: dict[str, Any] | None = None
) -> dict[str, Any]:
    out = {
        "t": "header",
        "format": FORMAT,
        "version": VERSION,
        "seeds": [_seed_dict(seed) for seed in seeds],
        "mode": mode,
        "store": canonical(store),
        "max_pages": budgets.max_pages,
        "max_depth": budgets.max_depth,
    }
    if policy:  # the crawl-policy settings not at their default (crawl/scope.py)
        out["policy"] = policy
    return out


def _seed_dict(seed: Seed) -> dict[str, Any]:
    return seed_dict(seed)


def plan(
    records: list[dict[str, Any]],
    where: str,
    seeds: list[Seed] | None,
    mode: str,
    store: str,
    budgets: Budgets,
    policy: dict[str, Any] | None = None,
) -> Plan:
    """Start or resume, or ``ConfigError("JOBDIR", ...)`` saying what differs.

    ``where`` names the journal file in messages; ``seeds`` is None when the
    command line gave none.
    """
    if not records:
        if seeds is None:
            raise ConfigError("url/seeds", "give exactly one of -a url=URL or -a seeds=FILE")
        return Plan(seeds, False, [header(seeds, mode, store, budgets, policy)])
    head = records[0]
    if head.get("t") != "header" or head.get("format") != FORMAT:
        raise ConfigError("JOBDIR", f"{where} is not a traverse_crawl crawl state")
    if head.get("version") != VERSION:
        raise ConfigError(
            "JOBDIR", f"{where} is version {head.get('version')!r} of the crawl state; "
            f"this traverse_crawl reads version {VERSION}"
        )  # fmt: skip
    listed: Any = head.get("seeds")
    if not isinstance(listed, list) or not all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and isinstance(s.get("url"), str)
        and isinstance(s.get("content_type") or "", str)
        for s in listed
    ):  # fmt: skip
        problem: str | None = "record 1 (the header) is damaged: its seeds are malformed"
    else:
        problem = damaged_record(records, len(listed))
    if problem is not None:
        raise ConfigError(
            "JOBDIR", f"{where} {problem}, though its checksum is right; nothing was "
            "resumed or written: restore the file from a copy, or move the JOBDIR away to "
            "crawl again"
        )  # fmt: skip
    kept = [seed_from_dict(s) for s in listed]
    before = last_budgets(records)
    if seeds is not None and seeds != kept:
        raise ConfigError("JOBDIR", f"{where} holds a crawl of other seeds than the ones given")
    for name, old, new in (
        ("TRAVERSE_MODE", head.get("mode"), mode),
        ("TRAVERSE_STORE", head.get("store"), canonical(store)),
    ):
        if old != new:
            raise ConfigError("JOBDIR", f"{where} holds a crawl with {name}={old!r}, not {new!r}")
    # The crawl policy defines which pages a crawl has: a resume keeps it.
    kept_policy, given, defaults = head.get("policy") or {}, policy or {}, policy_defaults()
    for setting in sorted(set(kept_policy) | set(given)):
        was, now = (
            kept_policy.get(setting, defaults[setting]),
            given.get(setting, defaults[setting]),
        )
        if was != now:
            raise ConfigError(
                "JOBDIR", f"{where} holds a crawl with {setting}={was!r}, not {now!r}"
            )
    for name, old_value, new_value in (
        ("TRAVERSE_MAX_PAGES", before.max_pages, budgets.max_pages),
        ("TRAVERSE_MAX_DEPTH", before.max_depth, budgets.max_depth),
    ):
        if new_value < old_value:
            raise ConfigError(
                "JOBDIR", f"{where} holds a crawl with {name}={old_value}; "
                f"a resume may raise it, not lower it to {new_value}"
            )  # fmt: skip
    append = []
    if budgets != before:
        append.append(
            {"t": "budget", "max_pages": budgets.max_pages, "max_depth": budgets.max_depth}
        )
    return Plan(kept, True, append)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _optional(record: dict[str, Any], name: str, check: Any) -> bool:
    return name not in record or record[name] is None or check(record[name])


def _page_problem(record: dict[str, Any], seeds: int) -> str | None:
    key = record.get("s")
    if not _count(key) or key >= seeds:
        return f"seed key {key!r} is not one of its {seeds} seed(s)"
    for name in ("i", "d"):
        if not _count(record.get(name)):
            return f"{name!r} is {record.get(name)!r}, not a count"
    fetch = record.get("fetch")
    if not isinstance(record.get("u"), str) or not isinstance(fetch, dict):
        return "its URL or fetch result is missing"
    if not _optional(fetch, "warnings", _texts) or not _optional(fetch, "error", dict):
        return "its fetch result is malformed"
    if not _optional(fetch, "snapshot", dict):
        return "its fetch result is malformed"

    def text(value: Any) -> bool:
        return isinstance(value, str)

    def rows(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(x, list) for x in value)

    checks = {"ref": text, "links": _texts, "size": _count, "off": text, "store": text,
              "skip": rows}  # fmt: skip
    for name, check in checks.items():
        if not _optional(record, name, check):
            return f"its {name!r} is {type(record[name]).__name__}"
    return None


def _problem(record: dict[str, Any], seeds: int) -> str | None:
    kind = record.get("t")
    if kind == "page":
        return _page_problem(record, seeds)
    if kind == "budget":
        ok = _count(record.get("max_pages")) and _count(record.get("max_depth"))
        return None if ok else "its budgets are not counts"
    if kind == "sitemaps":
        key = record.get("s")
        if not _count(key) or key >= seeds or not _count(record.get("max_pages")):
            return "its seed key or budget is not valid"
        if not _texts(record.get("urls")) or not _texts(record.get("warnings")):
            return "its URLs or warnings are not lists of text"
        return None
    return f"its kind {kind!r} is not a crawl-state record"


def damaged_record(records: list[dict[str, Any]], seeds: int) -> str | None:
    """What is wrong with the first malformed record after the header, or None.

    Every record is checked before any is used: one written by something else (a hand
    edit, another program) behind a valid checksum would otherwise stop the crawl halfway
    through its resume and leave a manifest without its pages.
    """
    head = records[0]
    if not _count(head.get("max_pages")) or not _count(head.get("max_depth")):
        return "record 1 (the header) is damaged: its budgets are not counts"
    for number, record in enumerate(records[1:], start=2):
        problem = _problem(record, seeds)
        if problem is not None:
            return f"record {number} is damaged: {problem}"
    return None


def last_budgets(records: list[dict[str, Any]]) -> Budgets:
    found = Budgets(int(records[0]["max_pages"]), int(records[0]["max_depth"]))
    for record in records:
        if record.get("t") == "budget":
            found = Budgets(int(record["max_pages"]), int(record["max_depth"]))
    return found


def page_record(
    key: int, index: int, at: tuple[str, int], outcome: Outcome, store_warning: str | None
) -> dict[str, Any]:
    """``at``: the page's URL and depth, checked at a resume."""
    record: dict[str, Any] = {
        "t": "page", "s": key, "i": index, "u": at[0], "d": at[1], "fetch": outcome.fetch
    }  # fmt: skip
    if outcome.source_ref is not None:
        record["ref"] = outcome.source_ref
    if outcome.links:
        record["links"] = outcome.links
    if outcome.offhost_final_url is not None:
        record["off"] = outcome.offhost_final_url
    if outcome.body_size is not None:
        record["size"] = outcome.body_size
    if outcome.skipped:
        record["skip"] = outcome.skipped
    if store_warning is not None:
        record["store"] = store_warning
    return record


def sitemaps_record(
    key: int, found: list[str], warnings: list[str], max_pages: int
) -> dict[str, Any]:
    return {"t": "sitemaps", "s": key, "urls": found, "warnings": warnings, "max_pages": max_pages}


def replay_sitemaps(frontiers: dict[int, Frontier], records: list[dict[str, Any]]) -> set[int]:
    """Give back each seed's kept sitemap URLs, before its pages are replayed.

    Returns the seeds that got them; the others read their sitemaps again (the
    walk is bounded by the page budget, so a kept result under a smaller budget
    may be short).
    """
    done = set()
    for record in records:
        key = record.get("s")
        if record.get("t") != "sitemaps" or key not in frontiers or key in done:
            continue
        frontier = frontiers[key]
        if record["max_pages"] == frontier.max_pages and frontier.expect_sitemaps():
            frontier.add_sitemap_urls(list(record["urls"]), list(record["warnings"]))
            done.add(key)
    return done


def replay(frontiers: dict[int, Frontier], records: list[dict[str, Any]]) -> dict[int, int]:
    """Feed the page records to the frontiers; returns how many each seed took.

    Sorted by index, one pass is exact: an index can only be admitted once every
    smaller index is committed, and those come first. A record whose index the
    replay never admits (its predecessors were lost in a crash) or whose URL differs
    is dropped, and the page fetched again. A larger ``TRAVERSE_MAX_DEPTH`` works
    because page records keep every page's links, beyond the depth limit too; a
    larger ``TRAVERSE_MAX_PAGES`` because the queue does not depend on the budget.
    """
    pages = sorted(
        (r for r in records if r.get("t") == "page" and r.get("s") in frontiers),
        key=lambda r: (r["s"], r["i"]),
    )
    taken: dict[int, int] = {}
    for record in pages:
        frontier = frontiers[record["s"]]
        index = record["i"]
        if index < len(frontier.pages) or index in frontier.pending:
            continue  # kept twice: the first one stands
        if index >= frontier.admitted or frontier.queue[index] != (record["u"], record["d"]):
            continue  # its predecessors were lost, or the site changed: fetch it again
        if "store" in record:
            frontier.store_warnings[index] = record["store"]
        frontier.record(
            index,
            Outcome(
                record["fetch"],
                links=record.get("links", []),
                offhost_final_url=record.get("off"),
                source_ref=record.get("ref"),
                body_size=record.get("size"),
                skipped=record.get("skip"),
            ),
        )
        taken[record["s"]] = taken.get(record["s"], 0) + 1
    return taken
