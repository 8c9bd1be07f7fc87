"""The shell heuristic (rendering/shell.py) on truncated pages: the text libxml2's HTML
parser keeps of them (crawl/html.py), pinned."""

from __future__ import annotations

import pytest

from traverse_crawl.rendering.shell import ShellSignals, inspect

pytestmark = pytest.mark.parsing

SCRIPT = "var a='<p>x</p>';" * 60


@pytest.mark.parametrize(
    ("body", "prepared", "scripts", "empty_mount", "shell"),
    [
        # Cut inside a script: the rest of the page is script, and the mount stays empty.
        ('<html><body><div id="root"></div><script>' + SCRIPT, 0, 1028, True, True),
        # Cut inside an attribute: the cut tag is not read, the text before it is.
        ('<html><body><div id="app"><p>' + "word " * 30 + '<a href="/x" title="cut',
         149, 0, False, False),
        # Cut inside a start tag after a closed paragraph.
        ("<html><body><main><p>" + "word " * 200 + '</p><p class="unclosed',
         999, 0, False, False),
    ],
)  # fmt: skip
def test_truncated_pages(body, prepared, scripts, empty_mount, shell):
    signals = inspect(body)
    assert signals == ShellSignals(len(body), prepared, scripts, empty_mount, False)
    assert signals.suspected is shell
