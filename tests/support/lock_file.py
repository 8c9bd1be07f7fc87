"""The lock file read as a graph: each pinned package, its block of lines, and what needs it.

``uv pip compile --annotation-style line`` writes each package as ``name==version``,
its hash lines, then ``# via A, B`` naming what requires it (``traverse-crawl
(pyproject.toml)`` for the project itself).
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path

import tomllib

from tests.support.cli import REPO

PROJECT = "traverse-crawl (pyproject.toml)"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==")


def normal(name: str) -> str:
    """PEP 503's normalised name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    return normal(re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0])


def read_lock(path: Path) -> dict[str, tuple[list[str], set[str]]]:
    """name -> (its lines in the lock, the names of what requires it)."""
    packages: dict[str, tuple[list[str], set[str]]] = {}
    current: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        pin = _PIN.match(line)
        if pin:
            current = normal(pin.group(1))
            packages[current] = ([line], set())
        elif current is not None and line.startswith("    "):
            packages[current][0].append(line)
            if line.strip().startswith("# via "):
                for by in line.strip()[len("# via ") :].split(", "):
                    by = by.strip()
                    if by == PROJECT:
                        packages[current][1].add(PROJECT)
                    elif not by.startswith("-"):
                        packages[current][1].add(normal(by))
    return packages


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def closure(roots: set[str], packages: dict[str, tuple[list[str], set[str]]]) -> set[str]:
    """``roots`` and every package of the lock that one of them needs, transitively."""
    needs: dict[str, set[str]] = {}
    for name, (_, by) in packages.items():
        for parent in by:
            needs.setdefault(parent, set()).add(name)
    seen, queue = set(roots), deque(roots)
    while queue:
        for child in needs.get(queue.popleft(), ()):
            if child not in seen:
                seen.add(child)
                queue.append(child)
    return seen & set(packages)
