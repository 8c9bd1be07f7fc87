"""Large pages are read for links as a stream (``crawl/html.py``, ``anchors_streamed``),
never as one whole tree: the links, the skipped links and the warnings are those of the
tree walk, on any markup."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

import traverse_crawl.crawl.html as html_module
import traverse_crawl.crawl.links as links_module
from traverse_crawl.crawl.html import MAX_DEPTH, anchors_streamed
from traverse_crawl.crawl.links import find_links

ORIGIN = "http://a.test"
REPO = Path(__file__).resolve().parents[3]
FRAGMENTS = [
    '<a href="/x{n}">t</a>', "<A HREF='/Y{n}'>", "<a href=/z{n}>", "<a>", '<a href="">',
    '<base href="/b{n}/">', "<base>", '<base href="http://a.test/other/">', "<template>",
    "</template>", "<TEMPLATE>", "</TEMPLATE>", "<div>", "</div>", "<p>", "</p>",
    "<table><tr><td>", "</table>", '<script>var s="<a href=/s{n}>";</script>',
    "<style>a{{}}</style>", '<!-- <a href="/c{n}"> -->', '<textarea><a href="/ta{n}"></textarea>',
    '<noscript><a href="/ns{n}">n</a></noscript>', '<svg><a href="/svg{n}">s</a></svg>',
    '<select><option><a href="/o{n}">', '<form><a href="/f{n}">', "</a>", "caf\u00e9 ",
    "&amp;&lt;", '<meta charset="windows-1252">', '<a href="/\u00e9{n}">', '<?xml version="1.0"?>',
    "<!DOCTYPE html>", "<html>", "<html lang=x>", "<body>", "</body>", "</html>", "<head>",
    "</head>", '<title><a href="/t{n}"></title>', '<iframe><a href="/if{n}"></iframe>',
    '<![CDATA[<a href="/cd{n}">]]>', '<a href="#frag">', '<a href="http://other.test/o{n}">',
    '<a href="mailto:x@y">', '<a href=" /sp{n} ">', "\x00", "\ufeff", '<a href="/q?x=1&y=2">',
    "<plaintext>", '<xmp><a href="/xmp{n}"></xmp>', "<li>", "<ul>", "<font>", "<b><i></b></i>",
    '<a href="/n{n}"><a href="/m{n}">', '<frameset><frame src="/fr">', "<template></html>",
    '<object><a href="/ob{n}"></object>', "\n", " ",
]  # fmt: skip


def both(body: str, skipped: bool) -> tuple[object, object]:
    """``find_links`` of ``body`` by the tree walk, and as a stream."""
    results = []
    for threshold in (1 << 60, 0):
        links_module.STREAM_CHARS = threshold
        kept: list[list[object]] | None = [] if skipped else None
        results.append((find_links(body, ORIGIN + "/d/p", ORIGIN, 5, kept), kept))
    return results[0], results[1]


@pytest.fixture(autouse=True)
def _threshold():
    saved, feed = links_module.STREAM_CHARS, html_module._FEED_CHARS
    yield
    links_module.STREAM_CHARS, html_module._FEED_CHARS = saved, feed


@pytest.mark.parametrize("feed", [7, 1 << 20])
def test_the_stream_finds_what_the_tree_finds_on_random_markup(feed):
    html_module._FEED_CHARS = feed  # pieces that cut tags, attributes and entities
    rng = random.Random(feed)
    for case in range(1500):
        body = "".join(rng.choice(FRAGMENTS).format(n=i) for i in range(rng.randint(0, 60)))
        tree, stream = both(body, skipped=case % 2 == 0)
        assert tree == stream, body


def test_content_after_the_end_of_html_is_read_as_the_tree_reads_it():
    for body in (
        '<a href="/a"></html><a href="/b">',  # a second root: not walked
        '<template></template><a href="/a"></html><a href="/b">',  # the XPath reads it
    ):
        tree, stream = both(body, skipped=True)
        assert tree == stream


def test_nesting_past_the_bound_is_the_same_warning():
    body = "".join(f'<div><a href="/l{i}">x</a>' for i in range(MAX_DEPTH + 100))
    tree, stream = both(body, skipped=False)
    assert tree == stream
    (_links, warnings), _kept = stream  # type: ignore[misc]
    assert (
        f"markup nested deeper than {MAX_DEPTH} levels; the page was read only up to that point"
        in warnings
    )


def test_a_lone_surrogate_is_left_to_the_tree():
    assert anchors_streamed('<a href="/a">\ud800</a>') is None
    tree, stream = both('<a href="/a">\ud800</a><a href="/b">', skipped=False)
    assert tree == stream


MEASURE = """
import sys
import traverse_crawl.crawl.links as links
def peak_kib():  # this program's own (ru_maxrss keeps the forking process's across exec)
    return next(int(line.split()[1]) for line in open("/proc/self/status")
                if line.startswith("VmHWM:"))
links.STREAM_CHARS = int(sys.argv[1])
unit = '<p>words <a href="/l{0}">link</a> more words</p>\\n'
body = "<html><body>" + "".join(unit.format(i) for i in range(150_000)) + "</body></html>"
before = peak_kib()
found, warnings = links.find_links(body, "http://a.test/", "http://a.test", 10_000)
assert len(found) == 10_000 and len(warnings) == 1
print(peak_kib() - before)
"""


def test_a_large_page_is_read_without_its_whole_tree():
    # In a fresh interpreter, so that its peak RSS is this page's alone.
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(links_module.STREAM_CHARS)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    grown_kib = int(done.stdout)
    # The page is 6.9 MB (above STREAM_CHARS); its tree, about 150 MB. The stream holds
    # its hrefs only.
    assert grown_kib < 60 * 1024, grown_kib
