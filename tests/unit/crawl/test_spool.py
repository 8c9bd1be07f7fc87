"""Committed pages out of memory: the spooled, streamed manifest is the in-memory one.

Pure tests: two frontiers get the same outcomes in the same scrambled order, one
keeping its pages in memory (the reference), one in a ``Spool`` that spills
every few pages; the streamed manifest must be, byte for byte, what
``json.dump(manifest, indent=2, ensure_ascii=False)`` makes of the in-memory
manifest. Crawls with errors, warnings
(non-ASCII, quotes, newlines), store failures, off-host pages, sitemaps,
truncation, stops, and a resume from the journal's records.
"""

from __future__ import annotations

import io
import json
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traverse_crawl.crawl import frontier as frontier_module
from traverse_crawl.crawl import queue as urlqueue
from traverse_crawl.crawl import spool as pagelog
from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.spool import PageList, Spool
from traverse_crawl.jobdir import state as jobstate

SEED = "https://h.test/"
WARNINGS = ["slow answer", 'naïve “quotes” "and" \\ back\nslash', "emoji 🦀 \u2028 line"]


def url(i: int) -> str:
    return SEED if i == 0 else f"{SEED}p{i}" + ("/é" if i % 7 == 0 else "")


def outcome(seed: int, i: int, size: int) -> Outcome:
    """Page ``i``'s outcome: the same whenever it is fetched."""
    rng = random.Random(seed * 100_003 + i)
    links = [url(rng.randrange(size)) for _ in range(rng.randrange(6))]
    if rng.random() < 0.2:
        status = rng.choice([404, 500])
        error = {"kind": "http-error", "message": f"HTTP {status} from {url(i)}", "status": status}
        return Outcome({"error": error})
    fetch: dict = {"snapshot": {"url": url(i), "status": 200, "bodyHash": f"{i:064x}", "n": 1.5}}
    if rng.random() < 0.3:
        fetch["warnings"] = rng.sample(WARNINGS, rng.randrange(1, 3))
    offhost = "https://elsewhere.test/x" if rng.random() < 0.05 else None
    return Outcome(fetch, links, offhost, source_ref=f"ref-{i}", body_size=rng.randrange(9999))


def drive(
    frontier: Frontier, seed: int, size: int, records: list | None = None, stop: bool = True
) -> Frontier:
    """A crawl with scrambled arrivals; the same ``seed`` gives the same crawl."""
    rng = random.Random(seed)
    sitemaps = rng.random() < 0.5 and frontier.expect_sitemaps()
    sitemap_at = rng.randrange(3)
    stop_at = rng.choice([None, rng.randrange(1, size)]) if stop else None
    pending = frontier.admit()
    step = 0
    while pending or sitemaps:
        if sitemaps and (step >= sitemap_at or not pending):
            other = random.Random(seed + 1)  # the same URLs whenever they come
            found = [url(other.randrange(size)) for _ in range(5)]
            notes = ["sitemap: 1 URL skipped (ünicode)"]
            _, more = frontier.add_sitemap_urls(found, notes)
            if records is not None:
                records.append(jobstate.sitemaps_record(0, found, notes, frontier.max_pages))
            pending.extend(more)
            sitemaps = False
            continue
        step += 1
        if step == stop_at:
            frontier.stop("shutdown")
            break
        adm = pending.pop(rng.randrange(len(pending)))
        got = outcome(seed, adm.index, size)
        if random.Random(seed * 7 + adm.index).random() < 0.05:
            frontier.note_store_failure(adm.index, "disk full ✗")
        if records is not None:
            warning = frontier.store_warnings.get(adm.index)
            at = (adm.url, adm.depth)
            records.append(jobstate.page_record(0, adm.index, at, got, warning))
        _, more = frontier.record(adm.index, got)
        pending.extend(more)
    return frontier


def streamed(frontier: Frontier) -> str:
    out = io.StringIO()
    frontier.write_manifest(out)
    return out.getvalue()


@pytest.fixture
def spool(tmp_path):
    """One crawl's spool, shared by every frontier of a test (as by a crawl's seeds)."""
    spool = Spool(str(tmp_path))
    yield spool
    spool.close()


@pytest.fixture
def small_spill(monkeypatch):
    monkeypatch.setattr(pagelog, "SPILL_BYTES", 700)  # a chunk every page or two
    monkeypatch.setattr(urlqueue, "KEEP", 2)  # committed queue entries forgotten soon


@pytest.mark.parametrize("window", [4096, 3])
@pytest.mark.parametrize("seed", range(40))
def test_spooled_streamed_manifest_is_json_dump_of_the_in_memory_one(
    tmp_path, small_spill, monkeypatch, seed, window
):
    monkeypatch.setattr(frontier_module, "ADMIT_WINDOW", window)
    size = 10 + seed * 3
    budget, depth = random.Random(seed).choice([(size // 2, 9), (size * 2, 9), (size, 2), (3, 1)])
    memory = Frontier("s ü/1", SEED, budget, depth, "live")
    assert isinstance(memory.pages, PageList) and memory.window is None
    memory.window = window  # the same admissions, so the same arrivals
    drive(memory, seed, size)
    spool = Spool(str(tmp_path))
    spooled = Frontier("s ü/1", SEED, budget, depth, "live", spool=spool)
    drive(spooled, seed, size)
    expected = memory.manifest()
    text = json.dumps(expected, indent=2, ensure_ascii=False)
    assert streamed(spooled) == text
    assert streamed(memory) == text
    assert spooled.manifest() == expected
    assert os.listdir(tmp_path) == []  # the spool file has no name
    spool.close()


def test_the_cases_are_all_there(tmp_path, small_spill):
    """The seeds above cover errors, warnings, store failures, stops, truncation, sitemaps."""
    seen = set()
    for seed in range(40):
        size = 10 + seed * 3
        budget, depth = random.Random(seed).choice(
            [(size // 2, 9), (size * 2, 9), (size, 2), (3, 1)]
        )
        manifest = drive(Frontier("s", SEED, budget, depth, "live"), seed, size).manifest()
        text = json.dumps(manifest, ensure_ascii=False)
        seen |= {
            name
            for name, present in {
                "error": any("error" in p["fetch"] for p in manifest["pages"]),
                "warning": "naïve" in text,
                "store": "disk full" in text,
                "offhost": "resolved off-host" in text,
                "sitemap": "sitemap: 1 URL" in text,
                "stop": "crawl stopped" in text,
                "cap": "maxPages cap" in text,
                "parent": "discoveredFrom" in text,
            }.items()
            if present
        }
    assert len(seen) == 8, seen


@pytest.mark.parametrize("seed", range(30))
def test_a_window_never_changes_a_finished_crawl(spool, small_spill, monkeypatch, seed):
    monkeypatch.setattr(frontier_module, "ADMIT_WINDOW", 1 + seed % 4)
    size = 10 + seed * 3
    whole = Frontier("s", SEED, size, 9, "live")
    windowed = Frontier("s", SEED, size, 9, "live", spool=spool)
    drive(whole, seed, size, stop=False)
    drive(windowed, seed, size, stop=False)
    assert windowed.finished and windowed.manifest() == whole.manifest()


@pytest.mark.parametrize("seed", range(12))
def test_a_resumed_spooled_frontier_writes_the_same_manifest(spool, small_spill, monkeypatch, seed):
    monkeypatch.setattr(frontier_module, "ADMIT_WINDOW", 5)
    size = 30 + seed
    records: list = []
    memory = Frontier("s", SEED, size, 9, "live")
    memory.window = 5
    drive(memory, seed, size)
    drive(Frontier("s", SEED, size, 9, "live", spool=spool), seed, size, records)
    resumed = Frontier("s", SEED, size, 9, "live", spool=spool)
    resumed.admit()
    jobstate.replay_sitemaps({0: resumed}, records)
    rng = random.Random(seed)
    rng.shuffle(records)  # the journal's order does not matter
    jobstate.replay({0: resumed}, records)
    memory.stop_reason = None  # a resume starts without the last run's stop
    assert streamed(resumed) == json.dumps(memory.manifest(), indent=2, ensure_ascii=False)


def test_a_spool_that_cannot_be_written_keeps_the_pages_in_memory(tmp_path, small_spill):
    memory = drive(Frontier("s", SEED, 40, 9, "live"), 3, 40)
    spool = Spool(str(tmp_path / "missing"))  # TemporaryFile fails: no such directory
    spooled = drive(Frontier("s", SEED, 40, 9, "live", spool=spool), 3, 40)
    assert isinstance(spool.failed, OSError)
    assert streamed(spooled) == json.dumps(memory.manifest(), indent=2, ensure_ascii=False)


def test_an_empty_manifest_and_lone_surrogates(spool):
    empty = Frontier("s", SEED, 0, 2, "capture")
    assert streamed(empty) == json.dumps(empty.manifest(), indent=2, ensure_ascii=False)
    frontier = Frontier("s", SEED, 5, 2, "live", spool=spool)
    frontier.admit()
    frontier.record(0, Outcome({"snapshot": {"title": "bad \udc80 half"}}))
    assert next(iter(frontier.pages))["fetch"]["snapshot"]["title"] == "bad \udc80 half"


def test_the_compact_seen_set_agrees_with_a_set():
    rng = random.Random(7)
    values = [rng.getrandbits(64) for _ in range(5000)] + [0, 1, 2**64 - 1]
    values += [v ^ (1 << 40) for v in values[:500]]  # same low bits: long probe runs
    compact, reference = urlqueue.HashSet(), set()
    for value in values + values[:100]:
        compact.add(value)
        reference.add(value or 1)
    assert len(compact) == len(reference)
    assert all(v in compact for v in values)
    assert not any(rng.getrandbits(64) | 2 in compact for _ in range(2000))
    assert "not an int" not in compact


# -- the indented encoder ---------------------------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too: json writes them as NaN, Infinity
    | st.text()  # lone surrogates, control characters, quotes, non-ASCII
)
_json_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        | st.dictionaries(st.integers() | st.booleans() | st.none(), inner, max_size=2)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(value=_json_values, level=st.integers(min_value=0, max_value=3))
def test_the_indented_encoder_writes_what_json_dumps_writes(value: object, level: int) -> None:
    pad = "\n" + "  " * level
    expected = json.dumps(value, indent=2, ensure_ascii=False).replace("\n", pad)
    assert pagelog.indented(value, pad) == expected
