"""A JOBDIR whose journal was changed behind its checksums, or whose journal is a dangling
symbolic link: refused before any request with one line naming ``JOBDIR`` (exit 2), and the
finished crawl's manifest is left as it was."""

from __future__ import annotations

import json
import os
import zlib

import pytest

from tests.support.jobdir_helpers import crawl_command, long_site, run

BUDGET = ("-s", "TRAVERSE_MAX_PAGES=5", "-s", "TRAVERSE_MAX_DEPTH=1")


def encode(record: dict) -> bytes:
    data = json.dumps(record, separators=(",", ":")).encode("ascii")
    return b"%08x %s\n" % (zlib.crc32(data), data)


def set_field(name, value):
    def change(records):
        page = next(r for r in records if r["t"] == "page" and r["i"] == 0)
        page[name] = value

    return change


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (set_field("i", "0"), "record 2 is damaged: 'i' is '0', not a count"),
        (set_field("fetch", "x"), "is damaged: its URL or fetch result is missing"),
        (set_field("links", 5), "is damaged: its 'links' is int"),
        (set_field("s", 3), "is damaged: seed key 3 is not one of its 1 seed(s)"),
        (lambda rs: rs[0].update(max_pages="x"), "record 1 (the header) is damaged"),
        (lambda rs: rs.append({"t": "budget", "max_pages": "a", "max_depth": 1}), "record 7 is"),
        (lambda rs: rs[0].update(seeds="abc"), "its seeds are malformed"),
    ],
)
def test_a_record_damaged_behind_its_checksum_is_refused(server, tmp_path, damage, message):
    long_site(server)
    job = tmp_path / "job"
    first = run(crawl_command(server, tmp_path, "-s", f"JOBDIR={job}", *BUDGET))
    assert first.returncode == 0, first.stderr[-2000:]
    (kept,) = (tmp_path / "manifests").glob("*.json")
    finished = kept.read_bytes()
    assert len(json.loads(finished)["pages"]) == 5
    journal = job / "traverse-journal.jsonl"
    records = [json.loads(line[9:]) for line in journal.read_bytes().splitlines()]
    damage(records)
    journal.write_bytes(b"".join(encode(r) for r in records))
    before = journal.read_bytes()
    with server.lock:
        server.hits.clear()
    refused = run(crawl_command(server, tmp_path, "-s", f"JOBDIR={job}", *BUDGET, seed=False))
    assert refused.returncode == 2, refused.stderr[-2000:]
    (line,) = [ln for ln in refused.stderr.splitlines() if "error:" in ln]
    assert f"JOBDIR: {journal} " in line and message in line, line
    assert "Traceback" not in refused.stderr
    assert server.hits == []
    assert kept.read_bytes() == finished and journal.read_bytes() == before


def test_a_dangling_journal_link_says_what_is_wrong(server, tmp_path):
    long_site(server)
    job = tmp_path / "job"
    job.mkdir()
    os.symlink(tmp_path / "gone.jsonl", job / "traverse-journal.jsonl")
    refused = run(crawl_command(server, tmp_path, "-s", f"JOBDIR={job}", *BUDGET))
    assert refused.returncode == 2, refused.stderr[-2000:]
    (line,) = [ln for ln in refused.stderr.splitlines() if "error:" in ln]
    assert "holds no traverse-journal.jsonl" not in line, line
    assert (
        f"JOBDIR: {job / 'traverse-journal.jsonl'} is a symbolic link to "
        f"{str(tmp_path / 'gone.jsonl')!r}, which does not exist"
    ) in line, line
    assert server.hits == []
