"""Every ``traverse_*`` request meta key is declared once, in traverse_crawl/meta_keys.py.

Reads the package's string literals with ``ast``: a ``"traverse_..."`` literal anywhere
else would be a second declaration of a key (or a key nobody can find). The upper-case
``TRAVERSE_*`` names are settings, and ``traverse_crawl`` is the package.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import traverse_crawl
from traverse_crawl import meta_keys

ROOT = Path(traverse_crawl.__file__).parent
DECLARING = ROOT / "meta_keys.py"
# Its traverse_* strings are Prometheus metric names (docs/monitoring.md, "Metrics"),
# not request meta keys.
METRIC_NAMES = ROOT / "operations" / "metrics.py"
KEY = re.compile(r"traverse_[a-z0-9_]+")
NOT_KEYS = {"traverse_crawl"}  # the package's name (BOT_NAME)


def literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_meta_key_is_spelled_outside_its_declaration():
    found = [
        f"{path.relative_to(ROOT.parent)}:{line}: {value!r}"
        for path in sorted(ROOT.rglob("*.py"))
        if path not in (DECLARING, METRIC_NAMES)
        for line, value in literals(path)
        if KEY.fullmatch(value) and value not in NOT_KEYS
    ]
    assert found == [], "declare the key in traverse_crawl/meta_keys.py and import it"


def test_each_constant_is_its_key_upper_cased_and_declared_once():
    declared = {name: value for name, value in vars(meta_keys).items() if name.isupper()}
    assert declared, "meta_keys declares no key"
    for name, value in declared.items():
        assert value == "traverse_" + name.lower(), name
    assert len(set(declared.values())) == len(declared)


def test_settings_page_lists_every_key():
    """docs/settings.md's meta key table names every declared key, and only those."""
    text = (ROOT.parent / "docs" / "settings.md").read_text(encoding="utf-8")
    section = text.split("## Request meta keys", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`(traverse_[a-z0-9_]+)`", section))
    declared = {value for name, value in vars(meta_keys).items() if name.isupper()}
    assert sorted(declared - documented) == [], "keys missing from docs/settings.md"
    assert sorted(documented - declared) == [], "docs/settings.md names keys that do not exist"
