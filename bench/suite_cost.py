"""Where the test suite's time goes: wall time and CPU of every test, its child processes'
CPU included (the scrapy crawls, writer processes and servers the test started and reaped).

As a pytest plugin, in each process (pytest-xdist's workers included), one JSON line a test
into ``$SUITE_COST_DIR/<pid>.jsonl``::

    SUITE_COST_DIR=/tmp/cost .venv/bin/python -m pytest -p bench.suite_cost -n 2 --dist worksteal

then the totals by layer and the costliest tests::

    .venv/bin/python bench/suite_cost.py /tmp/cost [--top 30]

``pytest --durations`` gives wall time only: a test that waits costs the machine nothing,
one that starts ten crawls costs ten processes' CPU, and the two call for different cures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    directory = Path(os.environ.get("SUITE_COST_DIR", "bench/results/suite-cost"))
    started, (own, children) = time.monotonic(), _cpu()
    yield
    own_after, children_after = _cpu()
    row = {
        "test": item.nodeid,
        "wall": round(time.monotonic() - started, 3),
        "cpu": round(own_after - own, 3),
        "children_cpu": round(children_after - children, 3),
    }
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{os.getpid()}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def summary(directory: Path, top: int) -> str:
    rows: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.jsonl")):
        rows.extend(json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    layers: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for row in rows:
        layer = layers[row["test"].split("/")[1] if "/" in row["test"] else "?"]
        layer[0] += 1
        layer[1] += row["wall"]
        layer[2] += row["cpu"]
        layer[3] += row["children_cpu"]
    lines = [f"{'layer':<12}{'tests':>7}{'wall s':>9}{'cpu s':>9}{'children s':>12}"]
    for name, (count, wall, cpu, children) in sorted(layers.items()):
        lines.append(f"{name:<12}{count:>7}{wall:>9.0f}{cpu:>9.0f}{children:>12.0f}")
    lines.append("")
    heading = "test (by CPU, the test's and its children's)"
    lines.append(f"{'wall s':>7}{'cpu s':>7}{'child s':>8}  {heading}")
    rows.sort(key=lambda row: -(row["cpu"] + row["children_cpu"]))
    for row in rows[:top]:
        lines.append(
            f"{row['wall']:>7.1f}{row['cpu']:>7.1f}{row['children_cpu']:>8.1f}  {row['test']}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    print(summary(args.directory, args.top))


if __name__ == "__main__":
    main()
