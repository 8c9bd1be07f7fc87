"""Where each stored capture's response record is, for revisit records (docs/web-archives.md).

A revalidated 304 is a ``revisit`` record naming the earlier response by URL,
WARC-Date and SHA-1 payload digest, by which pywb finds the original. That SHA-1 is
of the payload as received, before content decoding; the store keeps the decoded
body, so it cannot be recomputed from the snapshot (a gzip-encoded page's would be
wrong), and re-reading the WARC folder at each start costs as much as decompressing
every file in it. So the writer remembers it in a file at the store's root: beside
the snapshots it is about (a revisit is made from a stored snapshot), not in the
WARC folder, which holds WARC files only. The store's readers, ours and Traverse's,
only open the per-source directories, so a file at the root is no snapshot to them.
"""

from __future__ import annotations

import json
import os
from typing import IO, TYPE_CHECKING

from traverse_crawl.warc.records import Written, sha1_digest

if TYPE_CHECKING:
    from traverse_crawl.snapshots.model import Snapshot

# One JSON line per capture (``sourceRef``, ``url``, ``date``, ``digest``), appended at
# the store's root. A capture it does not know (made without WARC) is referred to
# by its ``fetchedAt`` and the SHA-1 of its stored body, which is right whenever the
# body was sent as stored (not gzip-encoded, not in another charset). Earlier
# versions kept the same file in the WARC folder: ``migrate`` moves it.
FILE_NAME = "traverse-payload-digests.jsonl"


def migrate(warc_dir: str, store_root: str) -> str | None:
    """Move an old WARC folder's digest lines to the store's file; the old path if moved.

    The lines are appended (and synced) before the old file is removed, so a crash
    between the two only repeats lines, which say the same thing. Raises OSError
    when it cannot; the index then still reads the old file.
    """
    old = os.path.join(warc_dir, FILE_NAME)
    new = os.path.join(store_root, FILE_NAME)
    if not os.path.isfile(old) or os.path.abspath(old) == os.path.abspath(new):
        return None
    with open(old, "rb") as handle:
        data = handle.read()
    if data:
        os.makedirs(store_root, exist_ok=True)
        if not data.endswith(b"\n"):
            data += b"\n"  # a line cut by a crash stays one bad line, skipped on reading
        with open(new, "ab") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
    os.unlink(old)
    return old


class DigestIndex:
    def __init__(self, store_root: str, warc_dir: str = "") -> None:
        self.root = store_root
        self.path = os.path.join(store_root, FILE_NAME)
        # An old folder's file that could not be moved is still read.
        self.legacy = os.path.join(warc_dir, FILE_NAME) if warc_dir else ""
        self._known: dict[str, Written] | None = None
        self._out: IO[bytes] | None = None

    def _load(self) -> dict[str, Written]:
        known: dict[str, Written] = {}
        for path in filter(None, (self.legacy, self.path)):
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    for line in handle:
                        try:
                            entry = json.loads(line)
                            known[entry["sourceRef"]] = Written(
                                "", entry["date"], entry["url"], entry["digest"]
                            )
                        except (ValueError, KeyError, TypeError):
                            continue  # a line cut by a crash
            except OSError:
                pass
        return known

    def add(self, source_ref: str, response: Written) -> None:
        if self._out is None:
            os.makedirs(self.root, exist_ok=True)
            self._out = open(self.path, "ab", buffering=0)
        entry = {
            "sourceRef": source_ref,
            "url": response.url,
            "date": response.date,
            "digest": response.payload_digest,
        }
        # One unbuffered write per line (ASCII JSON): workers sharing a store append
        # whole lines to it.
        self._out.write((json.dumps(entry) + "\n").encode("ascii"))
        if self._known is not None:
            self._known[source_ref] = response

    def earlier(self, source_ref: str, prior: Snapshot) -> Written:
        """The response record a revisit refers to, for the stored snapshot ``prior``."""
        if self._known is None:
            self._known = self._load()
        found = self._known.get(source_ref)
        if found is not None:
            return found
        body = prior.get("bodyBytes")
        data = bytes(body) if body is not None else str(prior["body"]).encode("utf-8")
        return Written("", str(prior["fetchedAt"]), str(prior["url"]), sha1_digest(data))

    def close(self) -> None:
        out, self._out = self._out, None
        if out is not None:
            out.close()
