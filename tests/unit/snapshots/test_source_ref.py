"""``traverse-snapshot:`` refs, as pure tables (docs/snapshots.md, "sourceRef").

Expected values that are not Traverse's own examples were produced by running
Traverse's ``buildSnapshotSourceRef``/``parseSnapshotSourceRef`` (commit
03aeb1d) under Node 20; "throws" rows are where Traverse throws ``URIError`` and
we return None, as forage does.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote_plus

import pytest

from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.source_ref import SourceRef, build_source_ref, parse_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore

HOME = "https://example.test/crawl-site/home.html"
DIGEST = "e2c6c0ea7c7900c31f953e48d30d5e839801ab90630d751e7c8426ed5859da47"


def _snap(source_id: str, url: str, body_hash: str, fetched_at: str) -> dict[str, str]:
    return {"sourceId": source_id, "url": url, "bodyHash": body_hash, "fetchedAt": fetched_at}


BUILD_TABLE = [
    # Traverse's round-trip example
    (
        _snap(
            "id with spaces & symbols",
            "https://example.test/x?q=1",
            "abc123",
            "2026-07-02T00:00:00.000Z",
        ),
        "traverse-snapshot:id%20with%20spaces%20%26%20symbols?url=https%3A%2F%2Fexample.test"
        "%2Fx%3Fq%3D1&sha256=abc123&fetchedAt=2026-07-02T00%3A00%3A00.000Z",
    ),
    # Traverse's crawl page: the page id is encoded a second time
    (
        _snap("crawl-1::" + HOME, HOME, DIGEST, "2026-07-06T00:00:00.000Z"),
        "traverse-snapshot:crawl-1%3A%3Ahttps%3A%2F%2Fexample.test%2Fcrawl-site%2Fhome.html"
        "?url=https%3A%2F%2Fexample.test%2Fcrawl-site%2Fhome.html&sha256=" + DIGEST + ""
        "&fetchedAt=2026-07-06T00%3A00%3A00.000Z",
    ),
    # encodeURIComponent keeps ~*!'(); URLSearchParams keeps only *-._ and writes + for space
    (
        _snap("a~b*c!d'e(f)g", "http://h/p?a=b c~d*e!f'g(h)i", "0", "t"),
        "traverse-snapshot:a~b*c!d'e(f)g?url=http%3A%2F%2Fh%2Fp%3Fa%3Db+c%7Ed*e%21f%27g%28h%29i"
        "&sha256=0&fetchedAt=t",
    ),
    # UTF-8; a lone surrogate in a parameter is U+FFFD (URLSearchParams takes USVStrings)
    (
        _snap("café \U0001f600", "http://h/é\ud800", "h", "2026"),
        "traverse-snapshot:caf%C3%A9%20%F0%9F%98%80?url=http%3A%2F%2Fh%2F%C3%A9%EF%BF%BD"
        "&sha256=h&fetchedAt=2026",
    ),
    (_snap("", "u", "h", "t"), "traverse-snapshot:?url=u&sha256=h&fetchedAt=t"),
    (
        _snap("50%+x", "http://h/?x=%41+1", "h", "t"),
        "traverse-snapshot:50%25%2Bx?url=http%3A%2F%2Fh%2F%3Fx%3D%2541%2B1&sha256=h&fetchedAt=t",
    ),
]


@pytest.mark.parametrize(("snapshot", "ref"), BUILD_TABLE)
def test_build_is_byte_identical_and_round_trips(snapshot: dict[str, str], ref: str) -> None:
    assert build_source_ref(snapshot) == ref
    parsed = parse_source_ref(ref)
    expected_url = snapshot["url"].replace("\ud800", "\ufffd")
    assert parsed == SourceRef(
        snapshot["sourceId"], expected_url, snapshot["bodyHash"], snapshot["fetchedAt"]
    )


def test_build_ignores_flags() -> None:
    base = _snap("p", "http://h/", "h", "t")
    flagged = {**base, "fromCache": True, "notModified": True, "rendered": True}
    assert build_source_ref(flagged) == build_source_ref(base)


def test_build_refuses_a_lone_surrogate_id_like_encode_uri_component() -> None:
    with pytest.raises(ValueError):
        build_source_ref(_snap("\ud800", "u", "h", "t"))


P = "traverse-snapshot:"
Q = "?url=u&sha256=h&fetchedAt=t"

PARSE_TABLE: list[tuple[object, SourceRef | None]] = [
    (P + Q, SourceRef("", "u", "h", "t")),  # an empty id is allowed
    (P + "a?b" + Q, None),  # the key becomes "b?url"
    (P + "a?" + Q, SourceRef("a", "u", "h", "t")),  # URLSearchParams drops one leading "?"
    ("Traverse-snapshot:a" + Q, None),  # the prefix is case-sensitive
    (P + "a", None),  # no "?"
    (P + "%E0%A4%A" + Q, None),  # throws in Traverse
    (P + "%" + Q, None),  # throws
    (P + "%ED%A0%80" + Q, None),  # throws: an encoded surrogate
    (P + "%C0%80" + Q, None),  # throws: overlong
    (P + "%f4%90%80%80" + Q, None),  # throws: above U+10FFFF
    (P + "%41%4" + Q, None),  # throws
    (P + "a+b%20c?url=u+v%2B&sha256=h&fetchedAt=t", SourceRef("a+b c", "u v+", "h", "t")),
    (P + "a?url=&sha256=h&fetchedAt=t", None),  # empty
    (P + "a?sha256=h&fetchedAt=t", None),  # missing
    (P + "a?url=u&sha256=h&fetchedAt", None),
    (P + "a?url=u1&url=u2&sha256=h&fetchedAt=t&x=y", SourceRef("a", "u1", "h", "t")),
    (P + "a?url=%zz&sha256=%E0%A4%A&fetchedAt=t", SourceRef("a", "%zz", "\ufffd%A", "t")),
    (P + "a?url=u&&sha256=h&fetchedAt=t#frag", SourceRef("a", "u", "h", "t#frag")),
    (
        P + "%F0%9F%98%80?url=%F0%9F%98%80&sha256=h&fetchedAt=t",
        SourceRef("\U0001f600", "\U0001f600", "h", "t"),
    ),
    (P + "a?URL=u&sha256=h&fetchedAt=t", None),
    (P + "a?url%3Du&sha256=h&fetchedAt=t", None),
    (P + "a?u%72l=x&sha256=h&fetchedAt=t", SourceRef("a", "x", "h", "t")),
    # not even a string: still no exception
    (None, None),
    (b"traverse-snapshot:a?url=u&sha256=h&fetchedAt=t", None),
    (P + "\ud800" + Q, SourceRef("\ud800", "u", "h", "t")),
]


@pytest.mark.parametrize(("ref", "expected"), PARSE_TABLE)
def test_parse_is_tolerant(ref: object, expected: SourceRef | None) -> None:
    assert parse_source_ref(ref) == expected


def test_parsed_ref_finds_the_exact_snapshot(tmp_path: Path) -> None:
    store = FilesystemSnapshotStore(str(tmp_path))
    page_id = "crawl-1::" + HOME
    snaps = []
    for fetched_at, body in [
        ("2026-07-01T00:00:00.000Z", b"<h1>Hello</h1>"),
        ("2026-07-02T00:00:00.000Z", b"<h1>Changed</h1>"),
        ("2026-07-03T00:00:00.000Z", b"<h1>Hello</h1>"),
    ]:
        snap = build_snapshot(
            source_id=page_id,
            url=HOME,
            status=200,
            content_type="html",
            raw_body=body,
            content_type_header="text/html",
            fetched_at=fetched_at,
        )
        store.put(snap)
        snaps.append(snap)
    for snap in snaps:
        parsed = parse_source_ref(build_source_ref(snap))
        assert parsed is not None and parsed.source_id == page_id
        assert store.find(parsed.source_id, parsed.body_hash, parsed.fetched_at) == snap
    # get(id, hash) answers with the newest snapshot of that body, as in Traverse
    changed = parse_source_ref(build_source_ref(snaps[1]))
    assert changed is not None
    assert store.get(changed.source_id, changed.body_hash) == snaps[1]


def test_every_ascii_character_is_form_encoded_as_url_search_params_does() -> None:
    """URLSearchParams escapes every ASCII character but A-Z a-z 0-9 * - . _ and writes a
    space as "+" (ASCII values take a path of their own: compared here with the general
    one, quote_plus, on every character)."""
    everything = "".join(map(chr, range(128)))

    def form(value: str) -> str:
        return quote_plus(value, safe="*").replace("~", "%7E")

    for url in [*everything, everything, "https://h.example/a b?q=1&r=~x#f", "café ~"]:
        snapshot = {
            "sourceId": "s",
            "url": url,
            "bodyHash": "ab",
            "fetchedAt": "2024-01-02T03:04:05Z",
        }
        expected = (
            f"traverse-snapshot:s?url={form(url)}&sha256=ab&fetchedAt=2024-01-02T03%3A04%3A05Z"
        )
        assert build_source_ref(snapshot) == expected, repr(url)  # type: ignore[arg-type]
    assert form(" *-._~") == "+*-._%7E"
