"""What replay's reader process sends for a page: its body once, not as text and bytes."""

from __future__ import annotations

import marshal

from traverse_crawl.replay.reader_child import answer, plain
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.snapshots.store import FilesystemSnapshotStore


def test_a_large_text_page_is_sent_once(tmp_path):
    body = ("<p>caf\u00e9 " + "x" * 1_000_000 + "</p>").encode()
    store = FilesystemSnapshotStore(str(tmp_path))
    snapshot = build_snapshot(
        source_id="s::http://example.com/", url="http://example.com/", status=200,
        content_type="html", raw_body=body, content_type_header="text/html; charset=utf-8",
    )  # fmt: skip
    store.put(snapshot)
    found = answer(store, "s::http://example.com/", None)
    sent = marshal.dumps(plain(found))
    assert len(body) < len(sent) < len(body) + 10_000  # was twice the body
    got, _damaged, _failed, data, _work = marshal.loads(sent)
    assert data == body and got["body"] == ""  # the crawl decodes the text from the bytes
    assert {**got, "body": data.decode("utf-8", "surrogatepass")} == snapshot


def test_a_page_whose_links_are_not_read_is_not_parsed_and_its_work_is_the_same(tmp_path):
    body = '<p>caf\u00e9 <a href="/a">a</a> <a href="/b">b</a></p>'.encode()
    store = FilesystemSnapshotStore(str(tmp_path))
    snapshot = build_snapshot(
        source_id="s::http://example.com/", url="http://example.com/", status=200,
        content_type="html", raw_body=body, content_type_header="text/html; charset=utf-8",
    )  # fmt: skip
    store.put(snapshot)
    read = answer(store, "s::http://example.com/", None)
    unread = answer(store, "s::http://example.com/", None, links_wanted=False)
    assert read.work is not None and unread.work is not None
    assert read.work.links == ["http://example.com/a", "http://example.com/b"]
    assert unread.work.links is None  # the spider reads the page's own work, not its links
    assert unread.work._replace(links=read.work.links) == read.work
    assert unread.work.body_size == len(body)
    assert unread.snapshot == read.snapshot and unread.body == read.body == body
