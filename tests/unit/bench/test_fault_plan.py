"""The fault campaign's plans (bench/faults.py): a crawl's faults follow from the seed and
its index alone, so ``--seed S --only I`` injects what the campaign injected."""

from __future__ import annotations

from bench.faults import FAULTS_PER_CRAWL, KINDS, WORKER_KINDS, plan

PAGES = 39


def shown(seed: int, index: int) -> list[str]:
    return [fault.shown() for fault in plan(seed, index, 3, PAGES, KINDS)]


def test_a_crawls_plan_depends_on_the_seed_and_its_index_only():
    campaign = [shown(7, index) for index in range(20)]
    assert [shown(7, index) for index in (12, 3)] == [campaign[12], campaign[3]]
    assert len({tuple(p) for p in campaign}) == 20
    assert shown(8, 12) != campaign[12]


def test_every_plan_has_four_to_six_faults_in_the_crawl_and_every_kind_comes():
    seen = set()
    for index in range(60):
        faults = plan(1, index, 3, PAGES, KINDS)
        assert FAULTS_PER_CRAWL[0] <= len(faults) <= FAULTS_PER_CRAWL[1]
        assert [f.at for f in faults] == sorted(f.at for f in faults)
        for fault in faults:
            assert 2 <= fault.at <= PAGES - 2, fault.shown()
            assert fault.worker in range(3) if fault.kind in WORKER_KINDS else fault.worker == 0
            seen.add(fault.kind)
    assert seen == set(KINDS)


def test_a_plan_without_disk_full_when_no_tmpfs_can_be_mounted():
    kinds = tuple(kind for kind in KINDS if kind != "disk-full")
    assert all(f.kind != "disk-full" for i in range(40) for f in plan(1, i, 3, PAGES, kinds))
