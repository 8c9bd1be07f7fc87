"""The extraction process: a crawl's pages extracted beside it (docs/extraction.md).

A process, not a thread: extraction is CPU work that holds the GIL for all but
lxml's parse (about 0.55 ms of a capture's 1.5 ms of crawl CPU per page on the bench
site), and in a thread of the crawl it ran turn about with the reactor, so a crawl
with extraction ran at half the pages/s. Here it runs on another core. The items come
from the same ``Extractor``, compiled again from the extraction file's bytes, so an
items file is the same whichever process extracted its pages.

The protocol (the frames of ``utils/frames.py``; the crawl's side is
``extraction/process.py``): on stdin first
``{"raw": the extraction file's bytes, "source": its path, "max_items": int,
"timeout": float, "max_item_bytes": int}`` (and ``"items": False`` to be sent no items,
only the lines: what ``scrapy extract`` needs), then one ``(body, final URL, page URL,
page id, sourceRef, seed URL)`` per page. On stdout one frame per page, in order:
``(lines, items, warnings)`` (the page's lines of the items file, its items as plain
dicts, its page warnings), or ``None`` for a page whose extraction raised (the crawl
extracts that page itself, and so reports what it finds). If the rules cannot be
compiled the process exits at once; at EOF on stdin it sends its summary and exits.
Imports only the standard library and the extraction modules (lxml, regex).
"""

from __future__ import annotations

import logging
from typing import Any

from traverse_crawl.extraction.extractor import MAX_ITEM_BYTES_PER_PAGE, Extractor, encode_items
from traverse_crawl.extraction.rules import rules_from_bytes
from traverse_crawl.utils.frames import begin, finish, next_batch, send

Answer = tuple[bytes, list[dict[str, Any]], list[str]]


def answer(extractor: Extractor, page: tuple[Any, ...], items: bool = True) -> Answer:
    body, final_url, page_url, page_id, source_ref, seed_url = page
    extraction = extractor.extract(
        body,
        final_url,
        page_url=page_url,
        page_id=page_id,
        source_ref=source_ref,
        seed_url=seed_url,
    )
    # marshal takes exact builtins: each ExtractedItem (a dict subclass) as a dict.
    found = [dict(item) for item in extraction.items] if items else []
    return encode_items(extraction), found, extraction.warnings


def main() -> None:
    logging.disable(logging.CRITICAL)  # warnings go back in the answers
    frames, config = begin()
    if config is None:
        return
    try:
        rules = rules_from_bytes(config["raw"], config["source"])
    except Exception:  # the crawl compiled the same bytes: it extracts every page itself
        return
    extractor = Extractor(
        rules,
        config["max_items"],
        config["timeout"],
        config.get("max_item_bytes", MAX_ITEM_BYTES_PER_PAGE),
    )
    items = bool(config.get("items", True))
    while batch := next_batch(frames, 64):
        for page in batch:
            try:
                found: Any = answer(extractor, page, items)
            except Exception:
                found = None
            if not send(1, found):
                return
    finish()
