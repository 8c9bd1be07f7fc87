"""One page's items are bounded in bytes as they are made, so memory stays bounded too:
nested cards whose markup each holds the cards inside it once took about 1 GB of memory
and gave 200 MB of items from a 140 KB page."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.cli import REPO, scrapy_env

CHILD = """
import json
from traverse_crawl.extraction.extractor import Extractor
from traverse_crawl.extraction.items import encode_item
from traverse_crawl.extraction.rules import rules_from_bytes
card = '<div class="card"><h2>card {i}</h2><p>' + "lorem ipsum " * 8 + '</p>'
body = "<html><body>" + "".join(card.format(i=i) for i in range(1000)) + "</div>" * 1000
rules = rules_from_bytes(b'[[types]]\\nname="card"\\neach="css:div.card"\\n[types.fields]\\n'
                         b'title="css:h2::text"\\ntext="xpath:string(.)"\\nmarkup="xpath:."\\n')
extraction = Extractor(rules).extract(body, "http://127.0.0.1/")
print(json.dumps({
    "bytes": sum(len(encode_item(item)) for item in extraction.items),
    "items": len(extraction.items),
    "warnings": extraction.warnings,
    # VmHWM: this program's own peak (ru_maxrss keeps the forking test process's peak
    # across exec on Linux, so a large pytest worker showed through).
    "peak": next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                 if line.startswith("VmHWM:")),
}))
"""


def test_nested_matches_stop_at_the_byte_bound_in_bounded_memory():
    run = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=REPO, env=scrapy_env(), capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout)
    assert 0 < found["bytes"] <= 16 * 1024 * 1024
    assert found["warnings"] == [
        f"extraction: more than 16777216 bytes of items on this page; the first "
        f"{found['items']} item(s) were kept (TRAVERSE_MAX_ITEM_BYTES_PER_PAGE)"
    ]
    # The interpreter, lxml and the page take about 45 MB; the items at most 16 MiB (twice
    # over while a value is made from its text).
    assert found["peak"] < 200 * 1024 * 1024, found
