"""The request target of every case of ``tests/support/tricky.py`` is its WHATWG serialisation
(``fetch/urls.py``), and Node 20, Traverse's runtime, differs only where the table says."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.support.tricky import CASES, PAGE, href_of
from traverse_crawl.fetch import urls


def test_table_is_the_whatwg_serialisation() -> None:
    """The hand-written targets are what ada-url (the frontier's parser) gives."""
    base = "http://127.0.0.1:8080" + PAGE
    for case in CASES:
        href = urls.normalize(href_of(case, "127.0.0.1:8080"), base)
        assert href == "http://127.0.0.1:8080" + case.target, case.name
        assert urls.request_target(href) == case.target, case.name


def node_version() -> str:
    if shutil.which("node") is None:
        return ""
    run = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60)
    return run.stdout.strip()


@pytest.mark.skipif(
    not node_version().startswith("v20."), reason="Node.js 20 (Traverse's) is not installed"
)
def test_node20_differs_only_where_documented() -> None:
    """Node 20's ``new URL()`` gives the same serialisation except the cases marked ``node20``."""
    base = "http://127.0.0.1:8080" + PAGE
    script = (
        "const [base, hrefs] = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(hrefs.map(h => { const u = new URL(h, base);"
        " u.hash = ''; return u.href; })))"
    )
    hrefs = [href_of(case, "127.0.0.1:8080") for case in CASES]
    out = subprocess.run(
        ["node", "-e", script, json.dumps([base, hrefs])],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    node_hrefs = json.loads(out.stdout)
    for case, node_href in zip(CASES, node_hrefs, strict=True):
        assert node_href == "http://127.0.0.1:8080" + (case.node20 or case.target), case.name
