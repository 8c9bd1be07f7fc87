"""Pure tests of the diff classes and renderings."""

from __future__ import annotations

import random

import pytest

from traverse_crawl.manifests.read import shape_problem
from traverse_crawl.reports import diff


def ok(url: str, body_hash: str, **flags: bool) -> dict:
    snapshot = {"url": url, "status": 200, "contentType": "html", "bodyHash": body_hash, **flags}
    return {"url": url, "depth": 1, "fetch": {"snapshot": snapshot}}


def err(url: str, kind: str, status: int | None = None) -> dict:
    error = {"kind": kind, "message": "m", **({"status": status} if status else {})}
    return {"url": url, "depth": 1, "fetch": {"error": error}}


U = "https://h.test/p"


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        (ok(U, "a" * 64), ok(U, "a" * 64), "unchanged"),
        (ok(U, "a" * 64), ok(U, "b" * 64), "changed"),
        # A 304 revalidation is the prior itself, flagged: unchanged whatever else.
        (ok(U, "a" * 64), ok(U, "a" * 64, notModified=True, fromCache=True), "unchanged"),
        (ok(U, "a" * 64), err(U, "http-error", 404), "failed"),
        (ok(U, "a" * 64), err(U, "timeout"), "failed"),
        (err(U, "http-error", 500), ok(U, "a" * 64), "recovered"),
        (err(U, "http-error", 404), err(U, "http-error", 404), "unchanged"),
        (err(U, "http-error", 404), err(U, "http-error", 410), "changed"),
        (err(U, "timeout"), err(U, "network"), "changed"),
    ],
)
def test_classify(old, new, kind):
    assert diff.classify(old, new) == kind


def manifest(seed: str, *pages: dict) -> dict:
    return {"seed": {"id": seed, "url": U}, "pages": list(pages), "warnings": []}


def test_added_removed_and_seed_matching_by_id():
    old = [manifest("s", ok(U, "a" * 64), ok(U + "/gone", "c" * 64)), manifest("x", ok(U, "d"))]
    new = [manifest("s", ok(U, "a" * 64), ok(U + "/new", "e" * 64)), manifest("y", ok(U, "f"))]
    got = [(c.seed_id, c.url, c.kind) for c in diff.diff(old, new)]
    assert got == [
        ("s", U, "unchanged"),
        ("s", U + "/new", "added"),
        ("s", U + "/gone", "removed"),
        ("y", U, "added"),  # a seed only NEW has: every page added
        ("x", U, "removed"),
    ]


def test_text_lists_every_class_but_unchanged_and_json_has_everything():
    old = [manifest("s", ok(U, "a" * 64), ok(U + "/b", "b" * 64), err(U + "/c", "timeout"))]
    new = [manifest("s", ok(U, "a" * 64), ok(U + "/b", "9" * 64), ok(U + "/c", "c" * 64))]
    changes = diff.diff(old, new)
    assert diff.to_text(changes) == (
        "0 added, 0 removed, 1 changed, 0 failed, 1 recovered, 1 unchanged\n"
        "changed (1):\n"
        f"  {U}/b  200 html, bodyHash bbbbbbbbbbbb → 999999999999\n"
        "recovered (1):\n"
        f"  {U}/c  timeout → 200 html\n"
    )
    data = diff.to_json(changes)
    assert data["differs"] is True
    assert [p["class"] for p in data["pages"]] == ["unchanged", "changed", "recovered"]
    assert data["pages"][2]["old"] == {"error": {"kind": "timeout", "message": "m"}}


def test_nothing_differs_when_everything_is_unchanged():
    same = [manifest("s", ok(U, "a" * 64))]
    changes = diff.diff(same, same)
    assert not diff.differs(changes)
    assert diff.to_text(changes) == (
        "0 added, 0 removed, 0 changed, 0 failed, 0 recovered, 1 unchanged\n"
    )


def test_body_diff_is_bounded_in_lines_and_width():
    old = "\n".join(f"line {i}" for i in range(100))
    new = "\n".join(f"LINE {i}" for i in range(100))
    shown = diff.body_diff(old, new, 10)
    assert len(shown) == 11 and shown[-1].endswith("more diff line(s)")
    wide = diff.body_diff("x" * 5000, "y" * 5000, 10)
    assert all(len(line) <= diff.MAX_LINE + 1 for line in wide)
    assert "-" + "x" * (diff.MAX_LINE - 1) + "…" in wide


def test_body_diff_of_many_differing_lines_shows_the_changed_middle_as_one_hunk():
    """Random short lines on both sides: difflib would match them line by line in
    quadratic time; the shared start and end are kept out, the middle is replaced whole."""
    rng = random.Random(7)
    head, tail = ["<html>", "<body>"], ["</body>", "</html>"]
    old = [f"{rng.randrange(100)}" for _ in range(20_000)]
    new = [f"{rng.randrange(100)}" for _ in range(20_000)]
    shown = diff.body_diff("\n".join(head + old + tail), "\n".join(head + new + tail), 5)
    assert shown[0] == "@@ -3,20000 +3,20000 @@"
    assert "too many to match line by line" in shown[1]
    assert shown[2:5] == ["-" + line for line in old[:3]]
    assert shown[-1] == f"… {2 + 40_000 - 5} more diff line(s)"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "the top level is not an object"),
        ({"pages": []}, "no seed.id"),
        ({"seed": {"id": "s"}}, "no pages list"),
        ({"seed": {"id": "s"}, "pages": [], "warnings": [1]}, "warnings is not a list of strings"),
        ({"seed": {"id": "s"}, "pages": [{"depth": 0}]}, "pages[0] has no url"),
        ({"seed": {"id": "s"}, "pages": [{"url": U, "depth": -1}]}, "pages[0] has no depth"),
        (
            {"seed": {"id": "s"}, "pages": [{"url": U, "depth": 0, "fetch": {}}]},
            "pages[0] has not exactly one of fetch.snapshot and fetch.error",
        ),
        (
            {"seed": {"id": "s"}, "pages": [{"url": U, "depth": 0, "fetch": {"snapshot": {}}}]},
            "pages[0] has a snapshot without bodyHash",
        ),
        ({"seed": {"id": "s"}, "pages": [ok(U, "a")], "unknown": 1}, None),
    ],
)
def test_manifest_shape(data, problem):
    assert shape_problem(data) == problem
