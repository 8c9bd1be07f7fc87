"""Pure tests of the crawl state: journal records, refusals, and replay.

The replay property: for random link graphs, random completion orders and a
crash at a random point, a frontier rebuilt from the kept records and driven to
the end gives the manifest of an uninterrupted crawl — with the same budgets,
or with larger ones (continuing a truncated crawl).
"""

from __future__ import annotations

import random

import pytest

from traverse_crawl.crawl.frontier import Frontier, Outcome
from traverse_crawl.crawl.seeds import Seed
from traverse_crawl.errors import ConfigError
from traverse_crawl.jobdir import state as jobstate
from traverse_crawl.jobdir.journal import FileJournal, JournalError, MemoryJournal, encode

SEED = "https://h.test/"


def random_graph(rng: random.Random, size: int) -> dict[str, list[str]]:
    pages = [SEED] + [f"https://h.test/p{i}" for i in range(size)]
    return {url: rng.sample(pages, rng.randint(0, min(6, len(pages)))) for url in pages}


def crawl(
    graph: dict[str, list[str]],
    budgets: tuple[int, int],
    rng: random.Random,
    journal: MemoryJournal | None = None,
    frontier: Frontier | None = None,
    stop_after: int | None = None,
) -> Frontier:
    """Drive a frontier with outcomes completing in random order; keep each in ``journal``.

    Records are kept late and out of order (as items leave the pipelines), and a
    crash (``stop_after`` records) loses everything not kept yet.
    """
    if frontier is None:
        frontier = Frontier("s", SEED, budgets[0], budgets[1], "live")
        in_flight = frontier.admit()
    else:
        in_flight = frontier.outstanding()
    unkept: list[dict] = []
    kept = 0
    while in_flight or unkept:
        if unkept and (not in_flight or rng.random() < 0.4):
            record = unkept.pop(rng.randrange(len(unkept)))
            if journal is not None:
                if stop_after is not None and kept >= stop_after:
                    return frontier
                journal.append(record)
                kept += 1
            continue
        adm = in_flight.pop(rng.randrange(len(in_flight)))
        # With a JOBDIR the spider keeps links at every depth.
        outcome = Outcome({"snapshot": {"url": adm.url}}, links=list(graph[adm.url]))
        unkept.append(jobstate.page_record(0, adm.index, (adm.url, adm.depth), outcome, None))
        _, more = frontier.record(adm.index, outcome)
        in_flight.extend(more)
    assert frontier.finished
    return frontier


def resumed(records: list[dict], budgets: tuple[int, int]) -> Frontier:
    frontier = Frontier("s", SEED, budgets[0], budgets[1], "live")
    frontier.admit()
    jobstate.replay({0: frontier}, records)
    return frontier


@pytest.mark.parametrize("case", range(60))
def test_resume_after_a_crash_equals_an_uninterrupted_crawl(case):
    rng = random.Random(case)
    graph = random_graph(rng, rng.randint(1, 40))
    budgets = (rng.randint(1, 30), rng.randint(0, 4))
    expected = crawl(graph, budgets, random.Random(1)).manifest()
    journal = MemoryJournal()
    crawl(graph, budgets, rng, journal, stop_after=rng.randint(0, 30))
    for _crash in range(3):  # crash again during the resumed crawl, then finish
        frontier = resumed(journal.records(), budgets)
        crawl(graph, budgets, rng, journal, frontier, stop_after=rng.randint(0, 5))
    frontier = crawl(graph, budgets, rng, journal, resumed(journal.records(), budgets))
    assert frontier.manifest() == expected
    assert len({p["url"] for p in frontier.pages}) == len(frontier.pages)


@pytest.mark.parametrize("case", range(40))
def test_a_larger_budget_continues_to_the_larger_crawl(case):
    rng = random.Random(1000 + case)
    graph = random_graph(rng, rng.randint(1, 40))
    small = (rng.randint(1, 20), rng.randint(0, 3))
    large = (small[0] + rng.randint(0, 20), small[1] + rng.randint(0, 2))
    journal = MemoryJournal()
    crawl(graph, small, rng, journal)  # finished (and maybe truncated)
    frontier = crawl(graph, large, rng, journal, resumed(journal.records(), large))
    assert frontier.manifest() == crawl(graph, large, random.Random(2)).manifest()


def test_a_finished_crawl_resumed_with_the_same_budgets_has_nothing_to_fetch():
    rng = random.Random(7)
    graph = random_graph(rng, 30)
    journal = MemoryJournal()
    done = crawl(graph, (10, 2), rng, journal)
    frontier = resumed(journal.records(), (10, 2))
    assert frontier.finished and frontier.outstanding() == []
    assert frontier.manifest() == done.manifest()


def test_a_kept_outcome_whose_url_changed_is_fetched_again():
    frontier = resumed(
        [{"t": "page", "s": 0, "i": 0, "u": "https://h.test/other", "d": 0, "fetch": {}}], (5, 1)
    )
    assert frontier.pages == [] and [a.url for a in frontier.outstanding()] == [SEED]


# -- the journal file ----------------------------------------------------------


def test_file_journal_round_trips_and_drops_a_torn_tail(tmp_path):
    journal = FileJournal(str(tmp_path))
    records = [{"t": "header", "n": 1}, {"t": "page", "u": "https://h.test/é\n"}]
    for record in records:
        journal.append(record)
    journal.close()
    path = tmp_path / "traverse-journal.jsonl"
    intact = path.read_bytes()
    path.write_bytes(intact + encode({"t": "page", "i": 3})[:-7])  # a crash mid-append
    assert FileJournal(str(tmp_path)).records() == records
    again = FileJournal(str(tmp_path))
    again.append({"t": "page", "i": 4})  # the torn tail is cut before appending
    again.close()
    assert path.read_bytes() == intact + encode({"t": "page", "i": 4})
    assert FileJournal(str(tmp_path)).records()[-1] == {"t": "page", "i": 4}


def test_damage_before_the_last_record_is_an_error_naming_the_file(tmp_path):
    journal = FileJournal(str(tmp_path))
    for i in range(3):
        journal.append({"t": "page", "i": i})
    journal.close()
    path = tmp_path / "traverse-journal.jsonl"
    data = bytearray(path.read_bytes())
    data[12] ^= 1  # one flipped bit in the first record
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match="record 1 is damaged") as error:
        FileJournal(str(tmp_path)).records()
    assert error.value.path == str(path)


# -- refusals ------------------------------------------------------------------

SEEDS = [Seed("a", "https://a.test/"), Seed("b", "https://b.test/", "html")]


def kept_header(**changes):
    head = jobstate.header(SEEDS, "capture", "/srv/store", jobstate.Budgets(10, 2))
    return [dict(head, **changes)]


def plan(records, seeds=SEEDS, mode="capture", store="/srv/store", budgets=(10, 2)):
    return jobstate.plan(records, "J", seeds, mode, store, jobstate.Budgets(*budgets))


def test_a_new_jobdir_keeps_the_header_and_a_resume_may_omit_the_seeds():
    fresh = plan([])
    assert not fresh.resumed and fresh.append[0]["seeds"][1] == {
        "id": "b", "url": "https://b.test/", "content_type": "html"
    }  # fmt: skip
    again = plan(fresh.append, seeds=None)
    assert again.resumed and again.seeds == SEEDS and again.append == []
    larger = plan(fresh.append, budgets=(11, 2))
    assert larger.append == [{"t": "budget", "max_pages": 11, "max_depth": 2}]
    assert plan(fresh.append + larger.append, budgets=(11, 3)).append[0]["max_depth"] == 3


@pytest.mark.parametrize(
    ("records", "kwargs", "message"),
    [
        (kept_header(), {"seeds": SEEDS[:1]}, "other seeds"),
        (kept_header(), {"mode": "live"}, "TRAVERSE_MODE='capture', not 'live'"),
        (kept_header(), {"store": "/srv/other"}, "TRAVERSE_STORE='/srv/store'"),
        (kept_header(), {"budgets": (9, 2)}, "TRAVERSE_MAX_PAGES=10; a resume may raise it"),
        (kept_header(), {"budgets": (10, 1)}, "TRAVERSE_MAX_DEPTH=2"),
        (kept_header(format="other"), {}, "J is not a traverse_crawl crawl state"),
        (kept_header(version=99), {}, "J is version 99"),
        ([{"t": "page"}], {}, "not a traverse_crawl crawl state"),
        (kept_header(seeds=None), {}, "J record 1 (the header) is damaged: its seeds"),
        (kept_header(max_depth=True), {}, "J record 1 (the header) is damaged: its budgets"),
        (
            [*kept_header(), {"t": "page", "s": 0, "i": 0, "u": "u", "d": 0, "fetch": []}],
            {},
            "J record 2 is damaged: its URL or fetch result is missing, though its checksum",
        ),
        (
            [
                *kept_header(),
                {"t": "sitemaps", "s": 0, "urls": [1], "warnings": [], "max_pages": 1},
            ],
            {},
            "J record 2 is damaged: its URLs",
        ),
        ([*kept_header(), {"t": "later"}], {}, "record 2 is damaged: its kind 'later'"),
        ([], {"seeds": None}, "url/seeds"),
    ],
)
def test_refusals_name_jobdir_and_what_differs(records, kwargs, message):
    with pytest.raises(ConfigError) as error:
        plan(records, **kwargs)
    assert message in str(error.value)
    if kwargs.get("seeds", SEEDS) is not None:
        assert error.value.name == "JOBDIR"
