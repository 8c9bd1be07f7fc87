"""Where capture's cost beyond live goes: the writer process's work, split.

    .venv/bin/python bench/run.py writersplit [--runs 9]

What it measures and how: the comment above ``run``.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.capture import writer_cpu_ms_per_page  # noqa: E402
from bench.run import Bench, Run, line, summary  # noqa: E402

CALL = "            errors = write_batch(jobs, use_syncfs)\n"
VARIANTS = {
    "capture, no files": "            errors = [None] * len(jobs)\n",
    "capture, CPU only": (
        "            import time as _time  # bench/writersplit.py: the writer's CPU, no files\n"
        "            _each = float(os.environ['BENCH_WRITER_CPU_S'])\n"
        "            _until = _time.process_time() + _each * len(jobs)\n"
        "            while _time.process_time() < _until:\n"
        "                pass\n"
        "            errors = [None] * len(jobs)\n"
    ),
}


def _variant(bench: Bench, name: str) -> Path:
    """A copy of the package whose writer process runs ``VARIANTS[name]`` instead of writing."""
    root = bench.scratch / ("variant-" + name.replace(", ", "-").replace(" ", "-"))
    shutil.copytree(REPO / "traverse_crawl", root / "traverse_crawl")
    child = root / "traverse_crawl" / "snapshots" / "writer_child.py"
    text = child.read_text(encoding="utf-8")
    if text.count(CALL) != 1:
        raise SystemExit(f"writersplit: {child} no longer calls write_batch as {CALL.strip()!r}")
    child.write_text(text.replace(CALL, VARIANTS[name]), encoding="utf-8")
    return root


def _cpu_times() -> tuple[int, int]:
    with open("/proc/stat", encoding="ascii") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields), fields[3] + fields[4]  # all, idle + iowait


def _device_interrupts() -> dict[str, list[int]]:
    """Per numbered interrupt line (devices, not the CPUs' own), its count on each CPU."""
    cpus = os.cpu_count() or 1
    found: dict[str, list[int]] = {}
    with open("/proc/interrupts", encoding="ascii", errors="replace") as f:
        next(f)
        for text in f:
            fields = text.split()
            if not fields or not fields[0].rstrip(":").isdigit():
                continue
            counts = [int(x) for x in fields[1 : 1 + cpus] if x.isdigit()]
            name = " ".join(fields[1 + cpus :]) or fields[0]
            found[f"{fields[0]} {name}"] = counts
    return found


def _interrupts_per_page(
    before: dict[str, list[int]], after: dict[str, list[int]], pages: int
) -> tuple[list[float], str]:
    """Device interrupts per page on each CPU between two readings, and the busiest line."""
    per_cpu = [0] * (os.cpu_count() or 1)
    busiest, most = "", 0
    for name, counts in after.items():
        delta = [a - b for a, b in zip(counts, before.get(name, [0] * len(counts)), strict=False)]
        for cpu, value in enumerate(delta[: len(per_cpu)]):
            per_cpu[cpu] += value
        if sum(delta) > most:
            busiest, most = name, sum(delta)
    return [round(value / max(pages, 1), 2) for value in per_cpu], busiest


# Four rows, interleaved (one run of each in turn, repeated), against the same
# nginx and the same 2,000-page site, default settings:
#
# - ``live``: no store;
# - ``capture``: the code as it is;
# - ``capture, no files``: a copy of the package whose writer process answers every
#   batch at once without writing anything: everything capture costs the *crawl*
#   process (the item that waits, the frame, the pipe, the answers) and none of the
#   writer's own work;
# - ``capture, CPU only``: a copy whose writer process spins on the CPU, per file,
#   for as long as the real writer's median CPU per file in this bench's ``capture``
#   runs so far (0.45 ms before the first), and writes nothing: the writer's CPU
#   without its file system work.
#
# The copies are made once per bench run in the scratch directory (the package
# copied, one line of ``snapshots/writer_child.py`` replaced); they are never installed.
# Per row: median pages/s and its ratio to ``live``, CPU per page of the crawl
# process and of the writer process, and how many of the machine's cores were busy
# while the crawl ran (``/proc/stat``, every process on the machine: the crawl,
# its writer, nginx, the kernel's threads, anything else). Reading them: the gap
# between ``capture, no files`` and ``live`` is the crawl process's own cost of
# capturing; between ``capture`` and ``capture, no files`` the writer's work; and
# ``capture, CPU only`` tells whether that work hurts as CPU time (it then costs
# about what ``capture`` does) or through the file system.
#
# Per row also: the devices' interrupts per page, per CPU (``/proc/interrupts``,
# the numbered lines; the line with the most is named). A capture's files end in
# block-device interrupts, which the kernel handles on the CPUs the disk's
# interrupt is routed to, in the time of whatever runs there (docs/snapshots.md,
# "Where the crawl runs, on a small machine").
def run(bench: Bench) -> dict[str, Any]:
    args = bench.args
    pages = bench.site.pages
    print(f"\n== writersplit: capture's writer process, split: {pages} pages, {args.runs} runs ==")
    rows = ["live", "capture", *VARIANTS]
    copies = {name: _variant(bench, name) for name in VARIANTS}
    runs: dict[str, list[Run]] = {name: [] for name in rows}
    busy: dict[str, list[float]] = {name: [] for name in rows}
    irqs: dict[str, list[list[float]]] = {name: [] for name in rows}
    busiest: dict[str, str] = {}
    writer_s = 0.00045
    for i in range(args.warmup + args.runs):
        for name in rows:
            os.environ["BENCH_WRITER_CPU_S"] = f"{writer_s:.6f}"
            mode = "live" if name == "live" else "capture"
            before, irq_before = _cpu_times(), _device_interrupts()
            r = bench.traverse(f"{name}-{i}".replace(", ", "-"), mode=mode, cwd=copies.get(name))
            after, irq_after = _cpu_times(), _device_interrupts()
            bench.check(r, pages)
            if i < args.warmup:
                continue
            runs[name].append(r)
            total, idle = after[0] - before[0], after[1] - before[1]
            busy[name].append(round((os.cpu_count() or 1) * (total - idle) / max(total, 1), 2))
            per_cpu, busiest[name] = _interrupts_per_page(irq_before, irq_after, pages)
            irqs[name].append(per_cpu)
            if name == "capture":
                per_page = writer_cpu_ms_per_page(runs["capture"], pages)
                writer_s = per_page / 1000 if per_page else writer_s
    out: dict[str, Any] = {"pages": pages, "writer_cpu_s_per_file": writer_s, "rows": {}}
    live = summary(runs["live"])["pages_per_s"]
    for name in rows:
        s = summary(runs[name])
        writer = writer_cpu_ms_per_page(runs[name], pages) if name != "live" else None
        ratio = s["pages_per_s"] / live if live else 0.0
        cores = statistics.median(busy[name])
        by_cpu = [round(statistics.median(run[cpu] for run in irqs[name]), 2) for cpu in
                  range(len(irqs[name][0]))]  # fmt: skip
        print(line(name, s))
        print(
            f"    {ratio:.2f}x live; cores busy {cores:.2f} (runs {busy[name]})"
            + (f"; writer process {writer:.2f} ms/page of the CPU" if writer is not None else "")
            + f"; device interrupts per page by CPU {by_cpu} (most: {busiest[name]})"
        )
        out["rows"][name] = {
            **s,
            "ratio_to_live": round(ratio, 3),
            "cores_busy": busy[name],
            "device_interrupts_per_page_by_cpu": by_cpu,
            "busiest_interrupt_line": busiest[name],
            "writer_cpu_ms_per_page": writer,
            "runs": [r.to_dict() for r in runs[name]],
        }
    return out
