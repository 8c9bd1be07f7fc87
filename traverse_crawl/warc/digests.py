"""Where each stored capture's response record is, for revisit records (docs/web-archives.md).

A revalidated 304 is a ``revisit`` record naming the earlier response by URL,
WARC-Date and SHA-1 payload digest, by which pywb finds the original. The store
keeps only the decoded body, so that SHA-1 cannot be recomputed from it: this file
remembers it across crawls.
"""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, TextIO

from traverse_crawl.warc.records import Written, sha1_digest

if TYPE_CHECKING:
    from traverse_crawl.snapshots.model import Snapshot

logger = logging.getLogger(__name__)

# One JSON line per capture (``sourceRef``, ``url``, ``date``, ``digest``), appended in
# the WARC directory. A capture it does not know (made without WARC) is referred to
# by its ``fetchedAt`` and the SHA-1 of its stored body, which is right whenever the
# body was sent as stored (not gzip-encoded, not in another charset).
FILE_NAME = "traverse-payload-digests.jsonl"


class DigestIndex:
    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, FILE_NAME)
        self._known: dict[str, Written] | None = None
        self._out: TextIO | None = None

    def _load(self) -> dict[str, Written]:
        known: dict[str, Written] = {}
        try:
            with open(self.path, encoding="utf-8") as handle:
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
            self._out = open(self.path, "a", encoding="utf-8")
        entry = {
            "sourceRef": source_ref,
            "url": response.url,
            "date": response.date,
            "digest": response.payload_digest,
        }
        self._out.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._out.flush()
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
