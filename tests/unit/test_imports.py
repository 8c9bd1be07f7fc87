"""The package's shape: no import cycle, packages in layers, pure modules free of Scrapy,
every package documented.

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

ROOT = Path(traverse_crawl.__file__).parent
PACKAGE = "traverse_crawl"
# What a pure module may not import: Scrapy, Twisted and the browser stack.
SCRAPY_STACK = ("scrapy", "twisted", "playwright", "scrapy_playwright")
# The modules that translate between the pure logic and Scrapy (middlewares,
# pipelines, extensions, the spider, commands, download handlers). Every other
# module of the package is pure: it imports nothing of SCRAPY_STACK, and of the
# package only other pure modules. A new module is pure unless it is named here.
# The package itself names the public API, adapters included (imported only when a
# name is used: tests/unit/test_public_api.py), so no module of the package imports it.
ADAPTERS = frozenset({PACKAGE}) | frozenset(
    f"{PACKAGE}.{name}"
    for name in """
    addon settings spider page_outcomes commands checks.extension commands.checks
    commands.common commands.crawl commands.crawlstatus commands.diff commands.report
    commands.settings commands.snapshot commands.snapshots commands.warc commands.extract
    extraction.spider_extraction
    crawl.frontiers crawl.progress_extension crawl.scheduler crawl.spider_settings
    distributed.ledger_slot distributed.pipeline distributed.shared_politeness
    distributed.worker
    egress.dns_lookup egress.middleware egress.resolver
    fetch.compression_middleware fetch.exceptions fetch.failure_middleware fetch.failures
    fetch.handler
    fetch.http_error_middleware fetch.request fetch.stats_middleware fetch.tls_middleware
    fetch.userinfo_middleware
    jobdir.pipeline manifests.pipeline operations.exit_status operations.json_log
    operations.metrics operations.stats_file
    politeness.blocking politeness.delay_middleware politeness.delay_slot
    politeness.redirect_middleware
    politeness.retry_middleware politeness.robots_middleware
    rendering.addon rendering.browser rendering.handler rendering.middleware
    rendering.navigation rendering.pageguard rendering.response rendering.settle
    replay.middleware
    runtime.heap_extension runtime.log_level_extension runtime.log_redaction runtime.process_wide
    runtime.refill_extension runtime.stats_collector runtime.stop
    sitemaps.requests snapshots.capture_middleware
    snapshots.pipeline snapshots.revalidate_middleware warc.extension
    """.split()
)


# The package in layers, lowest first: a module imports only from its own layer and the
# layers below it, and the packages of one layer import each other without a cycle. A
# unit is a subpackage or a top-level module (``PACKAGE`` itself: the public API).
LAYERS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (name, frozenset(units.split()))
    for name, units in (
        # Leaf modules and shared helpers any layer may use: the typed errors, the
        # request meta keys, the signals, the stats helper, the version, utils/.
        ("foundation", "errors meta_keys signals stats version utils"),
        # Every setting, parsed once and checked (config/).
        ("settings", "config"),
        # The process (signals to stop, logging, heap, end-of-crawl results) and where
        # bytes live (a directory or a bucket).
        ("process and storage", "runtime storage"),
        # One request, sent byte for byte, guarded and polite (fetch, egress, robots,
        # delays, retries, redirects, block pages, meta robots).
        ("the request", "fetch egress politeness"),
        # The BFS of a seed: frontier, queue, scope, seeds, links, spool, the items.
        ("the frontier", "crawl"),
        # What a crawl does with its pages, each for any spider or for the spider's
        # seeds: capture and the store, replay, extraction, JOBDIR, manifests,
        # sitemaps, Redis workers, Chromium, WARC, checks, reports.
        (
            "features",
            "snapshots replay extraction jobdir manifests sitemaps distributed rendering"
            " warc checks reports",
        ),
        # Running crawls as a service over every feature: exit status, JSON logs,
        # metrics, the stats file.
        ("operations", "operations"),
        # The traverse spider: the composition of the features.
        ("the spider", "page_outcomes spider"),
        # What a project or a user runs: the add-on, the commands, this project's
        # settings, the demo, the public API.
        ("entry points", f"addon commands settings demo {PACKAGE}"),
    )
)


def module_names() -> dict[str, Path]:
    names = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def import_base(node: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` in module ``name`` imports from."""
    base = node.module or ""
    if node.level:
        anchor = name.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def imported(path: Path, name: str, modules: Mapping[str, Path]) -> set[str]:
    """Every module of the package that ``name`` (at ``path``) imports, and the rest."""
    found: set[str] = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = import_base(node, name, is_package)
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
    assert f"{PACKAGE}.fetch.urls" in edges[f"{PACKAGE}.crawl.links"]


def test_no_import_cycle_in_the_package():
    assert cycles(graph()) == []


def unit(module: str) -> str:
    """The layer unit of a module: its subpackage or top-level module (or the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(
    edges: Mapping[str, set[str]],
    layers: tuple[tuple[str, frozenset[str]], ...],
) -> list[str]:
    """Every module-level import from a lower layer to a higher one, every unit in no
    layer, and every cycle between units."""
    rank = {u: i for i, (_name, units) in enumerate(layers) for u in units}
    found: list[str] = []
    units: dict[str, set[str]] = {}
    for module, deps in sorted(edges.items()):
        a = unit(module)
        units.setdefault(a, set())
        if a not in rank:
            found.append(f"{module}: {a} is in no layer")
            continue
        for dep in sorted(deps):
            b = unit(dep)
            if a == b:
                continue
            units[a].add(b)
            if b in rank and rank[b] > rank[a]:
                found.append(
                    f"{module} -> {dep}: {a} ({layers[rank[a]][0]}) imports {b}, "
                    f"a higher layer ({layers[rank[b]][0]})"
                )
    found.extend("a cycle between packages: " + " ".join(c) for c in cycles(units))
    return found


_TOY = (("low", frozenset({"a"})), ("mid", frozenset({"b", "c"})), ("top", frozenset({"d"})))


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"p.b.x": {"p.a.y"}, "p.d.z": {"p.b.x", "p.c.w"}, "p.a.y": set()}, []),
        (
            {"p.a.y": {"p.d.z"}, "p.d.z": set()},
            ["p.a.y -> p.d.z: a (low) imports d, a higher layer (top)"],
        ),
        (
            {"p.b.x": {"p.c.w"}, "p.c.w": {"p.b.v"}, "p.b.v": set()},
            ["a cycle between packages: b c"],
        ),
        ({"p.e.x": set()}, ["p.e.x: e is in no layer"]),
    ],
)
def test_the_layer_checker(edges, expected):
    assert layer_violations(edges, _TOY) == expected


def test_every_unit_in_one_layer():
    named = [u for _name, units in LAYERS for u in units]
    assert sorted(u for u in set(named) if named.count(u) > 1) == []
    assert sorted({unit(m) for m in module_names()} - set(named)) == []
    assert sorted(set(named) - {unit(m) for m in module_names()}) == []


def test_the_package_is_in_layers():
    """No package-level cycle; no import from a lower layer to a higher one."""
    assert layer_violations(graph(), LAYERS) == []


def _stack(dep: str) -> bool:
    return any(dep == name or dep.startswith(name + ".") for name in SCRAPY_STACK)


def test_pure_modules_import_nothing_from_scrapy_or_the_adapters():
    modules = module_names()
    for name, path in modules.items():
        if name in ADAPTERS:
            continue
        for dep in imported(path, name, modules):
            assert not _stack(dep), f"{name} is pure but imports {dep}"
            assert dep not in ADAPTERS, f"{name} is pure but imports the adapter {dep}"


def test_every_adapter_named_exists():
    assert sorted(ADAPTERS - set(module_names())) == []


def test_the_architecture_page_names_every_package():
    """docs/architecture.md's tree names every package of traverse_crawl, and only those."""
    text = (ROOT.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")}
    named = set(re.findall(r"^\s*[├└│─ ]*([a-z_]+)/", text, flags=re.MULTILINE))
    assert sorted(packages - named) == [], "packages missing from docs/architecture.md"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str, name: str, modules: Mapping[str, Path]) -> list[str]:
    """Where module ``name`` uses a private name of another module of the package:
    ``from x import _y`` (``_y`` a function, class, constant or module) or ``x._y``."""
    found: list[str] = []
    is_package = modules.get(name, Path()).name == "__init__.py"
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # a local name -> the module of the package it is
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in modules:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = import_base(node, name, is_package)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in modules:
                    bound[alias.asname or alias.name] = sub
                if (sub in modules or base in modules) and base != name and _private(alias.name):
                    found.append(f"line {node.lineno}: from {base} import {alias.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            target = ast.unparse(node.value)
            module = bound.get(target, target if target in modules else None)
            if module is not None and module != name:
                found.append(f"line {node.lineno}: {target}.{node.attr} ({module})")
    return found


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from traverse_crawl.a import _b", ["line 1: from traverse_crawl.a import _b"]),
        ("from . import _b", ["line 1: from traverse_crawl import _b"]),
        ("from traverse_crawl import a as m\nm._c()", ["line 2: m._c (traverse_crawl.a)"]),
        (
            "import traverse_crawl.a\ntraverse_crawl.a._c",
            ["line 2: traverse_crawl.a._c (traverse_crawl.a)"],
        ),
        ("from traverse_crawl.a import b, __version__\nself._x\nb.y._z", []),
        ("from scrapy.x import _y\nimport lxml.etree as etree\netree._Element", []),
    ],
)
def test_the_private_name_finder(source, expected):
    modules = {f"{PACKAGE}.{n}": Path(f"{n}.py") for n in ("a", "z")} | {
        PACKAGE: Path("__init__.py")
    }
    assert private_uses(source, f"{PACKAGE}.z", modules) == expected


def test_no_module_uses_another_modules_private_names():
    """A name that starts with ``_`` belongs to its module; one another module needs
    is public. (Scrapy's own private classes, which the download handler builds on,
    are outside the rule: the Scrapy version is pinned.)"""
    modules = module_names()
    found = {
        name: uses
        for name, path in sorted(modules.items())
        if (uses := private_uses(path.read_text(encoding="utf-8"), name, modules))
    }
    assert found == {}
