"""Replay's reader process: reads each page's latest snapshot ahead of the crawl and does
the page's own work on it (docs/architecture.md, "Replay").

A process, not a thread: replay is CPU-bound in one interpreter, a replayed page's
own work (the store read, the link parse, ``sourceRef``, ``bodySize``, the body's
bytes) was about 0.35 ms of the crawl's 0.87 ms per page, and everything in it but
lxml's parse and the system calls holds the GIL. The answers come from the crawl's
own functions, so a replay is the same whether a page was read here or in the crawl.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from traverse_crawl.crawl.links import find_links
from traverse_crawl.fetch import urls
from traverse_crawl.snapshots.model import Snapshot, body_bytes, body_matches
from traverse_crawl.snapshots.source_ref import build_source_ref
from traverse_crawl.snapshots.store import FilesystemSnapshotStore, SnapshotStore
from traverse_crawl.utils.frames import begin, finish, next_batch, send

# The protocol (the frames of ``utils/frames.py``; the crawl's side is
# ``replay/reader.py``): on stdin first ``{"root": store root, "max_links": int or
# None, "bucket": where or None}``, then one ``(page id, links)`` per page (``links``:
# whether the crawl reads the page's links; not parsed when it does not). On stdout,
# for each run of requests taken together (up to MAX_ANSWERS, or about FRAME_BYTES of
# text), a list of ``Answer`` tuples in request order. At EOF it sends its summary and
# exits. Imports only the standard library and the modules above (lxml, ada-url).
MAX_ANSWERS = 16  # pages answered in one frame: the crawl wakes once for them
FRAME_BYTES = 1 << 20  # or fewer, once their text is this large


class PageWork(NamedTuple):
    """A replayed page's own work, done from its snapshot (the spider uses it as is)."""

    origin: str  # the snapshot URL's origin, the one ``links`` were found on
    links: list[str] | None  # None: not an HTML page
    warnings: list[str]  # the link parse's bound warnings
    source_ref: str
    body_size: int


class Answer(NamedTuple):
    snapshot: Snapshot | None
    damaged: list[str]  # damaged files skipped, described as the store describes them
    # The page's snapshot may be stored but cannot be used: why (a bucket read that
    # failed, a body that no longer matches its bodyHash). The page fails no-snapshot.
    failed: str | None
    body: bytes | None  # the Response's body, for a text snapshot
    work: PageWork | None


def page_work(
    snapshot: Snapshot, max_links: int | None, size: int, links_wanted: bool = True
) -> PageWork:
    """``size``: ``len(body_bytes(snapshot))``, the manifest's ``bodySize``. Without
    ``links_wanted`` (a page at the depth limit, no JOBDIR, no TRAVERSE_SKIPPED: the
    spider reads no links of it) the page is not parsed: the parse tree of a large page
    is most of what a replay of it costs in memory."""
    origin = urls.origin(snapshot["url"])
    links: list[str] | None = None
    warnings: list[str] = []
    if links_wanted and snapshot["contentType"] == "html" and origin:
        links, warnings = find_links(snapshot["body"], snapshot["url"], origin, max_links)
    return PageWork(origin, links, warnings, build_source_ref(snapshot), size)


def unusable(snapshot: Snapshot, data: bytes | None = None) -> str | None:
    """Why the stored ``snapshot`` cannot be served as its capture (``data``: its body's
    bytes, when made already), or None: a body is checked against its ``bodyHash``
    before it is used."""
    if body_matches(snapshot, data):
        return None
    return (
        f"the body of the snapshot fetched at {snapshot['fetchedAt']} does not match its "
        f"bodyHash {snapshot['bodyHash']}: changed since its capture"
    )


def answer(
    store: SnapshotStore, page_id: str, max_links: int | None, links_wanted: bool = True
) -> Answer:
    damaged: list[str] = []
    try:
        # strict: an object a bucket could not serve is not taken for "not stored".
        snapshot = store.latest(page_id, damaged, strict=True)
    except Exception as exc:  # the crawl names it in the page's no-snapshot error
        return Answer(None, damaged, str(exc) or type(exc).__name__, None, None)
    if snapshot is None:
        return Answer(None, damaged, None, None, None)
    try:
        # The links first: a large page's parse tree is gone before its bytes are made.
        work: PageWork | None = page_work(snapshot, max_links, 0, links_wanted)
        data = body_bytes(snapshot)
        work = work._replace(body_size=len(data)) if work is not None else None
    except Exception:  # the crawl does this page's work (and check) itself, and reports it
        return Answer(snapshot, damaged, None, None, None)
    problem = unusable(snapshot, data)
    if problem is not None:
        return Answer(None, damaged, problem, None, None)
    return Answer(snapshot, damaged, None, None if "bodyBytes" in snapshot else data, work)


def plain(found: Answer) -> tuple[Any, ...]:
    """The answer as plain tuples: marshal takes builtins only. A text snapshot sent with
    its body's bytes goes without its text, which the crawl decodes from them
    (``replay/reader.py``): the page is sent once, not twice."""
    work = None if found.work is None else tuple(found.work)
    snapshot = found.snapshot
    if snapshot is not None and found.body is not None:
        snapshot = {**snapshot, "body": ""}
    return (snapshot, found.damaged, found.failed, found.body, work)


def main() -> None:
    # The store's warnings (a damaged file) go back in the answers and are logged by the
    # crawl, where its log is; here they would reach stderr a second time, unformatted.
    logging.disable(logging.CRITICAL)
    frames, config = begin()
    if config is None:
        return
    bucket = config.get("bucket")
    if bucket:  # the store is in a bucket (storage/bucket.py)
        from traverse_crawl.storage.bucket import BucketLocation

        store: SnapshotStore = SnapshotStore(BucketLocation.from_description(bucket))
    else:
        store = FilesystemSnapshotStore(config["root"])
    max_links = config["max_links"]
    while batch := next_batch(frames, MAX_ANSWERS):
        answers, size = [], 0
        for page_id, links_wanted in batch:
            found = answer(store, page_id, max_links, links_wanted)
            answers.append(plain(found))
            text = found.snapshot.get("body") if found.snapshot else None
            size += len(found.body or b"") + len(text or "")
            # A text page goes as its bytes only: its text is let go before it is sent.
            del found, text
            if size >= FRAME_BYTES:  # large pages: each goes out as soon as it is read
                if not send(1, answers):
                    return
                answers, size = [], 0
        if answers and not send(1, answers):
            return
    finish()
