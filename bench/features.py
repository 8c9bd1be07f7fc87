"""CPU per page of each mode and each optional feature, in one table.

    .venv/bin/python bench/run.py features [--runs 3] [--pages 2000] [--baseline DIR]
        [--feature "LABEL:MODE:NAME=VALUE[,NAME=VALUE...]"]... [--only TEXT]...

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.origins import ManyOrigins, crawl_origins  # noqa: E402
from bench.run import Bench, Run, summary  # noqa: E402

# A feature's settings, written with these names, get a path of the run's own.
RUN_DIR = "{run}"
DEFAULTS = "defaults, default politeness"


@dataclass
class Row:
    """One configuration: a mode and the settings that turn a feature on."""

    label: str
    mode: str = "live"
    settings: dict[str, str] = field(default_factory=dict)
    needs: str = ""  # a program that must be on PATH (redis-server)
    # Crawled on the many-origins site at the default politeness (bench/origins.py)
    # instead of the one origin at TRAVERSE_MIN_DELAY=0.
    origins: bool = False
    base: str = "live (rendering off)"  # the row its ratio is taken against

    def extra(self, work: Path, run_id: str) -> list[str]:
        return [
            f"{name}={value.replace(RUN_DIR, str(work)).replace('{id}', run_id)}"
            for name, value in self.settings.items()
        ]


ROWS = [
    Row("live (rendering off)"),
    Row("capture", "capture"),
    Row("replay", "replay"),
    Row("capture + WARC", "capture", {"TRAVERSE_WARC_DIR": f"{RUN_DIR}/warc"}),
    Row("live + JOBDIR", "live", {"JOBDIR": f"{RUN_DIR}/job"}),
    Row("live + sitemaps", "live", {"TRAVERSE_SITEMAPS": "auto"}),
    Row(
        "live + Redis, 1 worker",
        "live",
        {"REDIS_URL": "{redis}", "TRAVERSE_CRAWL_ID": "features-{id}"},
        needs="redis-server",
    ),
    # The crawl policy (crawl/scope.py): every link judged by the host scope and the
    # patterns (none of which matches a page of the site, so the pages are the same), and
    # by the trap guards and the no-tracking key.
    Row(
        "scope+include/exclude",
        "live",
        {
            "TRAVERSE_SCOPE": "host",
            "TRAVERSE_INCLUDE": '["^https?://static[.]example[.]"]',
            "TRAVERSE_EXCLUDE": '["/search", "[?&]sort=", "/cart/"]',
        },
    ),
    Row(
        "trap guards+no-tracking",
        "live",
        {"TRAVERSE_TRAP_GUARDS": "True", "TRAVERSE_SEEN_KEY": "no-tracking"},
    ),
    # The web policy: the rows above, meta robots obeyed, the challenge-page signatures
    # searched in every page (none matches the bench site), and a delay factor of 2 (one
    # request at a time, each after twice the last download time).
    Row("TRAVERSE_POLICY=web", "live", {"TRAVERSE_POLICY": "web"}),
    # The same policy without the factor's pacing: its per-page work alone. And live one
    # request at a time, the factor's pacing alone: the factor sends an origin's requests
    # one by one, where live (TRAVERSE_MIN_DELAY=0) sends eight at once.
    Row("web, no delay factor", "live", {"TRAVERSE_POLICY": "web", "TRAVERSE_DELAY_FACTOR": "0"}),
    Row("live, one request at a time", "live", {"CONCURRENT_REQUESTS_PER_DOMAIN": "1"}),
    # The same two policies at the default politeness, where the delay paces every crawl
    # and the factor adds no wait (twice a loopback download is far below 1 s): 200
    # loopback origins, 10 pages each, TRAVERSE_MIN_DELAY=1. A paced crawl costs more CPU
    # per page than the rows above (the event loop wakes for each page instead of
    # serving many per turn), for both rows alike.
    Row(DEFAULTS, origins=True, base=DEFAULTS),
    Row("web, default politeness", "live", {"TRAVERSE_POLICY": "web"}, origins=True, base=DEFAULTS),
    # The extraction bench's rules (bench/extract.toml: 8 fields, one of them many).
    Row(
        "capture + extraction",
        "capture",
        {
            "TRAVERSE_EXTRACT": str(REPO / "bench" / "extract.toml"),
            "TRAVERSE_ITEMS_DIR": f"{RUN_DIR}/items",
        },
    ),
    # And bench/checks.toml: every kind of check, each seed's evaluated once from its
    # manifest and items file (docs/checks.md).
    Row(
        "capture + extraction + checks",
        "capture",
        {
            "TRAVERSE_EXTRACT": str(REPO / "bench" / "extract.toml"),
            "TRAVERSE_ITEMS_DIR": f"{RUN_DIR}/items",
            "TRAVERSE_CHECKS": str(REPO / "bench" / "checks.toml"),
        },
    ),
]


def documented(checkout: Path) -> set[str]:
    """The settings a checkout's docs/settings.md documents (a table row each)."""
    try:
        text = (checkout / "docs" / "settings.md").read_text(encoding="utf-8")
    except OSError:
        return set()
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)`", text, re.M)) | set(
        name
        for group in re.findall(r"^\| ((?:`[A-Z0-9_]+`,? ?)+) \|", text, re.M)
        for name in re.findall(r"`([A-Z0-9_]+)`", group)
    )


def parse_feature(text: str) -> Row:
    """``LABEL:MODE:NAME=VALUE[,NAME=VALUE...]`` (``{run}``: the run's own directory)."""
    label, mode, assignments = [*text.split(":", 2), "", ""][:3]
    settings = dict(a.split("=", 1) for a in assignments.split(",") if "=" in a)
    if not label or mode not in ("live", "capture", "replay"):
        raise SystemExit(f"--feature {text!r}: give LABEL:live|capture|replay:NAME=VALUE,...")
    return Row(label, mode, settings)


def sitemap(root: Path, pages: int) -> None:
    """``/sitemap.xml`` listing every page of the site (TRAVERSE_SITEMAPS=auto finds it)."""
    path = root / "sitemap.xml"
    if path.exists():
        return
    from bench.site import page_path

    urls = "".join(f"<url><loc>{page_path(i)}</loc></url>" for i in range(pages))
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
        encoding="utf-8",
    )


# Each row is a `scrapy crawl traverse` of the bench site (bench/run.py's settings,
# TRAVERSE_MAX_PAGES = the site's pages) in its mode with its feature's settings;
# rows whose settings the checkout does not document (docs/settings.md), or whose
# program is missing, are skipped with a line saying so. Rows alternate run by run
# after the warm-up (live, capture, replay, ...), so load drift hits all alike; each
# capture writes a fresh store and replay reads the latest capture's. The figure is
# the median CPU per page: user + system time of the crawl process and the children
# it waited for (the snapshot writer, the WARC writer, the replay reader, the
# extraction process), start-up
# included, over the pages recorded; beside it its ratio to live, pages/s (crawl
# time) and peak RSS. With --baseline DIR every row is run with that checkout too,
# interleaved, and the table shows both. A smoke check: --pages 200 --runs 1
# --warmup 0.
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    rows = [*ROWS, *(parse_feature(f) for f in args.feature)]
    if args.only:
        chosen = {r.label for r in rows if any(text in r.label for text in args.only)}
        chosen |= {r.base for r in rows if r.label in chosen}  # a ratio needs its base row
        if any(r.mode == "replay" for r in rows if r.label in chosen):
            chosen.add("capture")  # replay reads the store the capture row writes
        rows = [r for r in rows if r.label in chosen]
    sides: dict[str, Path | None] = {"this": None}
    if args.baseline is not None:
        sides["baseline"] = args.baseline
    known = {side: documented(path or REPO) for side, path in sides.items()}
    redis = None
    plan: list[tuple[Row, str]] = []
    for row in rows:
        if row.needs and shutil.which(row.needs) is None:
            print(f"  {row.label}: {row.needs} not found, skipped")
            continue
        for side in sides:
            unknown = sorted(n for n in row.settings if n not in known[side])
            if unknown:
                print(f"  {row.label} ({side}): {', '.join(unknown)} not documented, skipped")
                continue
            plan.append((row, side))
    if any(r.needs == "redis-server" for r, _ in plan):
        from bench.distributed import RedisProcess

        redis = RedisProcess(bench.scratch)
    if any("TRAVERSE_SITEMAPS" in r.settings for r, _ in plan):
        sitemap(bench.site.root, bench.site.pages)
    pages = bench.site.pages
    stores = {side: bench.scratch / f"features-store-{side}" for side in sides}
    runs: dict[tuple[str, str], list[Run]] = {(r.label, s): [] for r, s in plan}
    origins: ManyOrigins | None = None
    print(f"\n== features: {pages} pages, {args.runs} runs each (+{args.warmup} warm-up) ==")
    try:
        for i in range(args.warmup + args.runs):
            for row, side in plan:
                store = stores[side]
                if row.mode == "capture":
                    shutil.rmtree(store, ignore_errors=True)
                elif row.mode == "replay" and not store.exists():
                    print(f"  {row.label} ({side}): no capture to replay yet")
                    continue
                work = Path(tempfile.mkdtemp(prefix="features-", dir=bench.scratch))
                extra = [
                    s.replace("{redis}", redis.url if redis else "")
                    for s in row.extra(work, f"{side}-{i}")
                ]
                if row.origins:
                    if origins is None:
                        origins = ManyOrigins(bench.site.root, args.origins)
                        origins.start()
                    done = crawl_origins(
                        bench,
                        origins,
                        f"features-{side}-origins-{i}",
                        args.origin_pages,
                        settings=extra,
                        cwd=sides[side],
                    )
                    if bench.check(done, args.origins * args.origin_pages) and i >= args.warmup:
                        runs[(row.label, side)].append(done)
                    continue
                done = bench.traverse(
                    f"features-{side}-{row.mode}-{i}",
                    mode=row.mode,
                    # Live rows get a fresh store of their own: nothing of a capture's.
                    store=store if row.mode != "live" else None,
                    extra=extra,
                    cwd=sides[side],
                )
                if bench.check(done, pages) and i >= args.warmup:
                    runs[(row.label, side)].append(done)
    finally:
        if redis is not None:
            redis.stop()
        if origins is not None:
            origins.cleanup()
    return _table(runs, list(sides), {row.label: row.base for row in rows})


def _table(
    runs: dict[tuple[str, str], list[Run]], sides: list[str], bases: dict[str, str]
) -> dict[str, Any]:
    table: dict[str, dict[str, Any]] = {}
    for (label, side), done in runs.items():
        if done:
            table.setdefault(label, {})[side] = summary(done)

    def cell(label: str, side: str) -> str:
        s = table[label].get(side)
        if s is None:
            return f"{'-':>28}"
        base = table.get(bases.get(label, ""), {}).get(side)
        ratio = s["cpu_ms_per_page"] / base["cpu_ms_per_page"] if base else 0.0
        return (
            f"{s['cpu_ms_per_page']:>6.2f} ms {ratio:>5.2f}x {s['pages_per_s']:>7.1f}/s "
            f"{s['maxrss_mb']:>5.1f} MB"
        )

    head = "".join(f" {side:>28}" for side in sides)
    print(f"\n  {'CPU per page (vs live or defaults), pages/s, peak RSS':<30}{head}")
    for label in table:
        print(f"  {label:<30}" + "".join(f" {cell(label, side)}" for side in sides))
    if len(sides) > 1:
        print("\n  CPU per page, this / baseline:")
        for label, by_side in table.items():
            if "this" in by_side and "baseline" in by_side:
                ratio = by_side["this"]["cpu_ms_per_page"] / by_side["baseline"]["cpu_ms_per_page"]
                print(f"  {label:<30} {ratio:.3f}x")
    return {"rows": table}
