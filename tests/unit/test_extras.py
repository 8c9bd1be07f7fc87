"""The core install pulls none of the optional features' packages; the lock covers [all]."""

from __future__ import annotations

from tests.support.cli import REPO
from tests.support.lock_file import closure, project, read_lock, requirement_name
from traverse_crawl.config.extras import EXTRAS

FEATURE_PACKAGES = {"playwright", "scrapy-playwright", "redis", "prometheus-client", "botocore"}
FEATURE_PACKAGES |= {"warcio", "isal"}


def test_the_core_install_needs_none_of_the_features_packages():
    packages = read_lock(REPO / "requirements.lock")
    core = closure({requirement_name(r) for r in project()["dependencies"]}, packages)
    assert "scrapy" in core and "parsel" in core  # the graph is read
    assert not core & FEATURE_PACKAGES, sorted(core & FEATURE_PACKAGES)


def test_each_extra_is_declared_and_all_of_them_are_in_the_lock():
    extras = project()["optional-dependencies"]
    assert set(extras) == {*EXTRAS, "all"}
    assert extras["all"] == [f"traverse_crawl[{','.join(EXTRAS)}]"]
    packages = read_lock(REPO / "requirements.lock")
    every = closure({requirement_name(r) for e in EXTRAS for r in extras[e]}, packages)
    assert FEATURE_PACKAGES <= every
    for extra, requirements in extras.items():
        if extra != "all":
            assert {requirement_name(r) for r in requirements} <= set(packages), extra
