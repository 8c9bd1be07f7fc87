"""Peak memory and time of extracting one large page of cards, as the crawl extracts it.

    .venv/bin/python bench/extraction_memory.py [--cards 470000] [--baseline DIR]

Builds an HTML page of ``--cards`` cards (one per line, about 100 bytes each: 470,000
cards is 48 MB) and extracts it with ``Extractor`` and the crawl's bounds (1,000 items a
page, 16 MiB of items), in a fresh process per measurement: that process's peak RSS
(``VmHWM``) and seconds, once after only parsing the page and running the ``each``
selector (what extraction needs whatever the spans cost), once extracting it with
spans. ``TRAVERSE_EXTRACT_TIMEOUT`` is raised to 600 s so a slow run is measured
rather than cut. With ``--baseline DIR`` (a checkout of other code) the same is run
against it too, and whether the items are byte for byte the same is printed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
from traverse_crawl.extraction.extractor import Extractor, parse_body
from traverse_crawl.extraction.items import encode_item
from traverse_crawl.extraction.rules import rules_from_bytes

def peak():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

cards, what = int(sys.argv[1]), sys.argv[2]
card = ('<div class="card"><h2>Card {i}</h2><span class="price">${i}.00</span>'
        '<a href="/item/{i}">more</a></div>\n')
body = ("<!DOCTYPE html>\n<html><head><title>Cards</title></head><body>\n"
        + "".join(card.format(i=i) for i in range(cards)) + "</body></html>\n")
rules = rules_from_bytes(b'''[[types]]
name = "card"
each = "css:div.card"
[types.fields]
title = "css:h2::text"
price = { selector = "css:.price::text", re = '([0-9.,]+)', type = "number" }
link = { selector = "xpath:.//a/@href", url = true }
''')
started = time.monotonic()
if what == "parse":
    root, _ = parse_body(body)
    found = rules.types[0].each.compiled(root)
    digest, items = "", len(found)
else:
    extraction = Extractor(rules, timeout=600).extract(body, "http://127.0.0.1/shop/")
    lines = b"".join(encode_item(item) for item in extraction.items)
    digest, items = hashlib.sha256(lines).hexdigest(), len(extraction.items)
    assert "more than 1000 items" in extraction.warnings[-1], extraction.warnings
print(json.dumps({"mb": len(body.encode()) / 1e6, "peak": peak(), "seconds":
                  time.monotonic() - started, "items": items, "sha256": digest}))
"""


def measure(checkout: Path, cards: int, what: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(cards), what], cwd=checkout, capture_output=True,
        text=True, check=True, env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    found: dict[str, Any] = json.loads(run.stdout)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=470_000)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    args = parser.parse_args()
    checkouts = [("this code", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    digests = []
    for label, checkout in checkouts:
        parse = measure(checkout, args.cards, "parse")
        full = measure(checkout, args.cards, "extract")
        digests.append(full["sha256"])
        print(
            f"{label}: page {full['mb']:.1f} MB, {args.cards} cards; parse + each: "
            f"peak {int(parse['peak']) / 2**20:.0f} MB, {float(parse['seconds']):.1f} s; "
            f"extraction: peak {int(full['peak']) / 2**20:.0f} MB, "
            f"{float(full['seconds']):.1f} s, {full['items']} items, "
            f"items sha256 {str(full['sha256'])[:16]}"
        )
    if len(digests) == 2:
        print("items byte for byte the same:", "yes" if digests[0] == digests[1] else "NO")


if __name__ == "__main__":
    main()
