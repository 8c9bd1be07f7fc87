"""The fault campaign's short form (docs/reliability.md): two of its crawls, as a user runs
them, ``python bench/faults.py --seed 2 --only 0 --only 2``.

Three Redis workers with the store, manifests and items files in a bucket, under ten
faults between them: a worker SIGKILLed and restarted, workers stopped and continued,
the bucket cut, answering 500 and slow, the Redis connections blackholed, redis-server
paused, killed and restarted. Every invariant holds: each worker's exit status, the
single-process crawl's manifests and items files, every sourceRef resolving to bytes of
its bodyHash, no page recorded twice, each manifest written once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.faults import KINDS, plan
from tests.support.cli import REPO

pytestmark = [pytest.mark.redis, pytest.mark.s3]

SEED = 2
CRAWLS = (0, 2)


def test_the_campaigns_crawls_keep_every_invariant_under_faults(tmp_path: Path) -> None:
    planned = [fault.kind for index in CRAWLS for fault in plan(SEED, index, 3, 39, KINDS)]
    assert {"worker-kill", "worker-stop", "bucket-500", "redis-restart"} <= set(planned)
    out = tmp_path / "summary.json"
    only = [arg for index in CRAWLS for arg in ("--only", str(index))]
    done = subprocess.run(
        [sys.executable, "bench/faults.py", "--seed", str(SEED), *only, "--json", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    shown = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, shown
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["crawls"] == len(CRAWLS), shown
    assert summary["failures"] == {}, shown
    assert summary["lost"] == 0, shown
    # The faults fire at points of the crawl's progress, so nearly all of them land.
    assert summary["faults"] >= len(planned) - 2, shown
    assert len(summary["faults_by_kind"]) >= 5, shown
    for index in CRAWLS:
        assert f"crawl {index:3d}  plan: " in done.stdout, shown
    assert "invariant failures: 0 crawl(s)" in done.stdout, shown
