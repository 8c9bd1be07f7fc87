"""The package's shape: no import cycle, a core free of Scrapy, a component map that is true.

Reads every module's ``import`` statements (function-level ones included: a
lazy import that hides a cycle is still a cycle) with ``ast``; imports nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

import traverse_crawl
from tests.cli import scrapy

ROOT = Path(traverse_crawl.__file__).parent
PACKAGE = "traverse_crawl"
# What the pure core may not import (STYLE §1): Scrapy and what only its adapters use.
NOT_IN_CORE = ("scrapy", "twisted", "playwright", "scrapy_playwright", "traverse_crawl.")
# core may import core.
CORE = f"{PACKAGE}.core"


def module_names() -> dict[str, Path]:
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def imported(path: Path, name: str, modules: Mapping[str, Path]) -> set[str]:
    """Every module of the package that ``name`` (at ``path``) imports, and the rest."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # ``from pkg import mod`` imports the module pkg.mod.
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return found


def graph() -> dict[str, set[str]]:
    modules = module_names()
    return {
        name: {dep for dep in imported(path, name, modules) if dep in modules and dep != name}
        for name, path in modules.items()
    }


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(edges.get(node, ())):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}, []),
    ],
)
def test_the_cycle_finder(edges, expected):
    assert cycles(edges) == expected


def test_the_graph_sees_the_package():
    edges = graph()
    assert f"{PACKAGE}.rendering.middleware" in edges
    assert f"{PACKAGE}.rendering.pageguard" in edges[f"{PACKAGE}.rendering.middleware"]
    assert f"{PACKAGE}.core.urls" in edges[f"{PACKAGE}.core.links"]


def test_no_import_cycle_in_the_package():
    assert cycles(graph()) == []


def test_core_imports_nothing_from_scrapy_or_the_adapters():
    modules = module_names()
    for name, path in modules.items():
        if name != CORE and not name.startswith(CORE + "."):
            continue
        for dep in imported(path, name, modules):
            if dep.startswith(CORE + ".") or dep == CORE:
                continue
            assert not dep.startswith(NOT_IN_CORE) and dep not in NOT_IN_CORE, (name, dep)


def test_the_component_map_lists_every_module_and_nothing_else():
    """docs/architecture.md's map names every module of the tree, and only those."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## Component map", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("|")]
    listed = {name for row in rows for name in re.findall(r"`([a-z_/]+\.py)`", row)}
    tree = {
        str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py") if path.name != "__init__.py"
    }
    assert sorted(tree - listed) == [], "modules missing from the component map"
    assert sorted(listed - tree) == [], "the component map names modules that do not exist"


def test_a_crawl_process_does_not_import_the_remote_control_stack(tmp_path):
    # Scrapy imports every EXTENSIONS_BASE key, even one mapped to None; RemoteControl's
    # module brings aiohttp and a TLS context into every crawl process (about 0.15 s).
    # A replay of a store that does not exist: one invalid-config page, no network.
    done = scrapy(
        *("crawl", "traverse", "-a", "url=https://example.invalid/"),
        *("-s", "TRAVERSE_MODE=replay", "-s", f"TRAVERSE_STORE={tmp_path / 'none'}"),
        *("-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}"),
        timeout=120,
        python_flags=("-X", "importtime"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "scrapy" in imported and "traverse_crawl.core.config" in imported  # the project
    assert "aiohttp" not in imported
    assert "scrapy.extensions.remote_control" not in imported
