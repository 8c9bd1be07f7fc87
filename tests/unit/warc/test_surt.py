"""SURT keys (``warc/surt.py``) are the ones pywb computes for the same URLs."""

from __future__ import annotations

import json

import pytest

from tests.support.warctools import PYWB_BIN, run
from traverse_crawl.warc.surt import surt

pytestmark = pytest.mark.pywb


def test_surt_keys_equal_pywbs(tmp_path):
    urls = [
        "http://127.0.0.1:8080/a/b.html?b=2&a=1",
        "https://www.Example.com/Path/",
        "https://example.com:443/",
        "http://www2.example.org:8000/x?Z=1&y",
        "http://example.com/p;q?jsessionid=0123456789abcdef0123456789abcdef&k=v",
    ]
    script = (
        "import json,sys; from surt import surt; print(json.dumps([surt(u) for u in sys.argv[1:]]))"
    )
    expected = json.loads(run(PYWB_BIN / "python", "-c", script, *urls))
    assert [surt(u) for u in urls] == expected
