"""The block-page rules, pure: the ``web`` policy's challenge signatures against a
page of each kind (tests/support/fixtures/block_pages) and against normal pages that
load the same vendors' scripts or embed a captcha widget; the runs of STOP_AFTER."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traverse_crawl.politeness.block_pages import (
    CHALLENGE_PATTERNS,
    BlockPatterns,
    BlockRuns,
    given_up_origin,
    given_up_warning,
)

FIXTURES = Path(__file__).parents[2] / "support" / "fixtures" / "block_pages"
BLOCK_PAGES = sorted(FIXTURES.glob("*.html"))
NORMAL_PAGES = sorted((FIXTURES / "normal").glob("*.html"))
WEB = BlockPatterns(CHALLENGE_PATTERNS)


@pytest.mark.parametrize("path", BLOCK_PAGES, ids=lambda p: p.stem)
def test_each_challenge_page_is_a_block_page(path: Path) -> None:
    assert WEB.blocked(path.read_text(encoding="utf-8")) is not None


@pytest.mark.parametrize("path", NORMAL_PAGES, ids=lambda p: p.stem)
def test_a_normal_page_with_a_vendors_script_or_a_captcha_widget_is_not(path: Path) -> None:
    assert WEB.blocked(path.read_text(encoding="utf-8")) is None


def test_every_signature_is_exercised_by_some_challenge_page() -> None:
    pages = [path.read_text(encoding="utf-8") for path in BLOCK_PAGES]
    unused = [p for p in CHALLENGE_PATTERNS if not any(re.search(p, page) for page in pages)]
    assert unused == []


def test_the_signatures_compile_as_one_alternation_without_global_flags() -> None:
    re.compile("|".join(f"(?:{p})" for p in CHALLENGE_PATTERNS))


@pytest.mark.parametrize(
    ("patterns", "text", "found"),
    [
        ((), "<title>Just a moment...</title>", None),
        (("MARK-[0-9]",), "<p>MARK-7</p>", "MARK-[0-9]"),
        (("nope", "(?i)captcha"), "<div>CAPTCHA</div>", "(?i)captcha"),
        (("nope",), "<div>CAPTCHA</div>", None),
    ],
)
def test_the_first_pattern_found_names_the_verdict(patterns, text, found) -> None:
    judge = BlockPatterns(patterns)
    assert bool(judge) is bool(patterns)
    assert judge.blocked(text) == found


def test_stop_after_counts_block_pages_in_a_row_per_origin() -> None:
    runs = BlockRuns(3)
    assert [runs.page_blocked("a") for _ in range(2)] == [False, False]
    runs.page_answered("a")  # a page that is not a block page ends the run
    assert not runs.page_blocked("b")
    assert [runs.page_blocked("a") for _ in range(3)] == [False, False, True]
    assert runs.given_up == {"a": 3}
    assert not runs.page_blocked("a")  # given up once
    assert runs.warn_once(0, "a") and not runs.warn_once(0, "a") and runs.warn_once(1, "a")


def test_stop_after_0_never_gives_up() -> None:
    runs = BlockRuns(0)
    assert not any(runs.page_blocked("a") for _ in range(100))
    assert runs.given_up == {}


def test_the_given_up_warning_names_its_origin_and_no_other_warning_does() -> None:
    origin = "https://shop.example:8443"
    assert given_up_origin(given_up_warning(origin, 5)) == origin
    assert given_up_origin(f"retry 1/2 for {origin}/p after a block page") is None
