"""docs/architecture.md, "The middleware order, and why": its two tables are the add-on's.

Each table row names a middleware by its import path and gives its priority. The
``traverse_crawl`` rows must be exactly what ``traverse_crawl.addon`` installs (and the
render middleware ``traverse_crawl/rendering/addon.py`` adds); the ``scrapy`` rows exactly
the built-ins of Scrapy's base table that the add-on keeps; and a built-in named as
replaced must be one the add-on maps to ``None``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scrapy.settings import default_settings

from traverse_crawl import addon
from traverse_crawl.rendering import addon as render_addon
from traverse_crawl.rendering.middleware import RenderMiddleware

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
SECTION = "## The middleware order, and why"
ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([\w.]+)`\s*\|\s*([^|]*?)\s*\|")

Table = dict[str, int]


def doc_tables() -> dict[str, tuple[Table, set[str]]]:
    """Each ``###`` table of the section: ``{path: priority}`` and the built-ins it replaces."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(SECTION) + len(SECTION)
    section = text[start : text.index("\n## ", start)]
    tables: dict[str, tuple[Table, set[str]]] = {}
    rows: Table = {}
    replaced: set[str] = set()
    for line in section.splitlines():
        if line.startswith("### "):
            rows, replaced = {}, set()
            tables[line[4:].strip()] = (rows, replaced)
        elif match := ROW.match(line):
            priority, path, replaces = match.groups()
            assert path not in rows, f"{path} twice in the table"
            rows[path] = int(priority)
            replaced.update(re.findall(r"`(\w+)`", replaces))
    return tables


def installed(ours: dict[str, int | None], base: dict[str, int]) -> tuple[Table, Table, set[str]]:
    """The add-on's components, the built-ins it keeps, the class names of those it drops."""
    traverse = {path: order for path, order in ours.items() if order is not None}
    dropped = {path for path, order in ours.items() if order is None}
    kept = {path: order for path, order in base.items() if path not in dropped}
    return traverse, kept, {path.rsplit(".", 1)[1] for path in dropped}


def split(rows: Table) -> tuple[Table, Table]:
    ours = {path: order for path, order in rows.items() if path.startswith("traverse_crawl.")}
    theirs = {path: order for path, order in rows.items() if path not in ours}
    return ours, theirs


@pytest.mark.parametrize(
    ("title", "ours", "base", "extra"),
    [
        (
            "Downloader middlewares",
            addon.DOWNLOADER_MIDDLEWARES,
            default_settings.DOWNLOADER_MIDDLEWARES_BASE,
            {
                f"{RenderMiddleware.__module__}.{RenderMiddleware.__name__}": (
                    render_addon.MIDDLEWARE_PRIORITY
                )
            },
        ),
        (
            "Spider middlewares",
            addon.SPIDER_MIDDLEWARES,
            default_settings.SPIDER_MIDDLEWARES_BASE,
            {},
        ),
    ],
)
def test_the_table_is_the_addons(
    title: str, ours: dict[str, int | None], base: dict[str, int], extra: Table
) -> None:
    rows, replaced = doc_tables()[title]
    doc_ours, doc_builtins = split(rows)
    traverse, kept, dropped = installed(ours, base)
    assert doc_ours == {**traverse, **extra}
    assert doc_builtins == kept
    # "replaces" names only built-ins the add-on really maps to None.
    assert replaced <= dropped, replaced - dropped


def test_both_tables_are_read() -> None:
    tables = doc_tables()
    assert set(tables) == {"Downloader middlewares", "Spider middlewares"}
    assert all(rows for rows, _ in tables.values())
