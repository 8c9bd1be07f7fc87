"""The JavaScript-shell heuristic of on-shell-warning, as a table of pages."""

from __future__ import annotations

import pytest

from traverse_crawl.crawl.html import parse_html
from traverse_crawl.rendering import shell

BUNDLE = "<script>" + "window.app=function(){return 42};" * 40 + "</script>"
ROOT = '<div id="root"></div>'
APP = '<div id="app"></div>'
PROSE = "Visible words that a reader of the page would see without any script running. "


def page(body: str, head: str = "<title>Shop</title>") -> str:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>"


CASES = [
    # (name, html, suspected)
    ("empty root mount", page('<div id="root"></div><script src="/app.js"></script>'), True),
    ("empty __next mount", page('<div id="__next">  \n </div>' + "<!-- x -->" * 20), True),
    ("empty app mount on a section", page('<section id="app"></section>' + " " * 300), True),
    ("script-dominated, no mount", page("<p>Loading…</p>" + BUNDLE), True),
    ("unclosed script counts to the end", page("<p>hi</p><script>" + "x=1;" * 300), True),
    (
        "noscript text is not visible text",
        page(f"<noscript>You need to enable JavaScript to run this app.</noscript>{ROOT}"),
        True,
    ),
    ("ordinary page", page(f"<h1>Shop</h1><p>{PROSE * 10}</p>"), False),
    ("short page, no script, no mount", page("<p>Just a short note.</p>"), False),
    # The absolute floor: 600+ visible characters is never a shell.
    ("content-rich page with heavy scripts", page(f"<p>{PROSE * 9}</p>" + BUNDLE * 30), False),
    # Enough text relative to the HTML (>= 8 %), even with an empty mount.
    ("small page with an empty mount", page(f'<div id="root"></div><p>{PROSE}</p>'), False),
    ("filled mount", page('<div id="root"><p>Server-rendered</p></div>' + " " * 400), False),
    ("mount with a child element", page('<div id="root"><span></span></div>' + " " * 400), False),
    ("other id", page('<div id="main"></div>' + " " * 400), False),
    ("empty document", "", False),
    ("whitespace only", "   \n  ", False),
    # Harvested embedded state downgrades the verdict (not escalated).
    (
        "JSON-LD",
        page(
            '<div id="root"></div><script type="application/ld+json">'
            '{"@type": "Product", "name": "Lamp"}</script>' + BUNDLE
        ),
        False,
    ),
    (
        "__NEXT_DATA__",
        page(
            '<div id="__next"></div><script id="__NEXT_DATA__" type="application/json">'
            '{"props": {"pageProps": {"items": [1, 2]}}}</script>' + BUNDLE
        ),
        False,
    ),
    (
        "__INITIAL_STATE__",
        page('<div id="app"></div><script>window.__INITIAL_STATE__ = {"a": "}{"};</script>'),
        False,
    ),
    ("__PRELOADED_STATE__ array", page(f"{APP}<script>__PRELOADED_STATE__=[1,2]</script>"), False),
    # State that cannot be parsed is no state: still a shell.
    ("broken JSON-LD", page(f'{ROOT}<script type="application/ld+json">{{oops</script>'), True),
    ("state from a variable", page(f"{APP}<script>window.__INITIAL_STATE__ = s;</script>"), True),
    ("external script", page(f'{APP}<script src="/__INITIAL_STATE__=1.js"></script>'), True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "html", "suspected"), CASES, ids=[c[0] for c in CASES])
def test_shell_verdicts(name: str, html: str, suspected: bool) -> None:
    signals = shell.inspect(html)
    assert signals.suspected is suspected, signals
    assert shell.is_shell(html) is suspected


def test_signals_of_a_shell() -> None:
    html = page('<div id="root"></div>' + BUNDLE)
    signals = shell.inspect(html)
    assert signals.raw_chars == len(html)
    assert signals.prepared_chars == 0  # the <title> is in <head>: not visible text
    assert signals.script_chars == len(BUNDLE)
    assert signals.empty_mount is True
    assert signals.embedded_state is False
    assert signals.describe().startswith(f"prepared text 0 chars is 0.0% of {len(html)}-char HTML")


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>a <b>bold</b>\n\n word</p>", "a bold word"),
        ("<p>before</p><script>var hidden = 1;</script><p>after</p>", "before after"),
        ("<style>p{}</style><template><p>inert</p></template><p>shown</p>", "shown"),
        ("<svg><text>drawn</text></svg><p>shown</p>", "shown"),
        ("<p>tail</p><script>x</script> kept", "tail kept"),
        ("<nav>Menu</nav><footer>Footer</footer>", "Menu Footer"),
    ],
)
def test_prepared_text_is_the_visible_text(html: str, expected: str) -> None:
    root = parse_html(page(html))
    assert root is not None
    assert shell.prepared_text(root) == expected


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<script>ab</script>", len("<script>ab</script>")),
        ('<SCRIPT type="module">ab</SCRIPT>', len('<SCRIPT type="module">ab</SCRIPT>')),
        ("<scripts>no</scripts><script2>no</script2>", 0),
        ("<script>a</script>text<script>b</script>", 2 * len("<script>a</script>")),
        ("x<script>never closed", len("<script>never closed")),
        ("x<script", len("<script")),
    ],
)
def test_script_chars(html: str, expected: int) -> None:
    assert shell.script_chars(html) == expected


def test_many_unclosed_scripts_are_linear() -> None:
    # A lazy regex would backtrack quadratically here; the scan does not.
    html = "<script " * 200_000
    assert shell.script_chars(html) == len(html)
    assert shell.inspect(html).suspected is True  # all script, nothing visible


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('= {"a": "}"} tail', '{"a": "}"}'),
        ("=  [1, [2]] ;", "[1, [2]]"),
        ('= {"a": "\\"}"}', '{"a": "\\"}"}'),
        ("= 42", None),
        ("= {unclosed", None),
    ],
)
def test_balanced_json(source: str, expected: str | None) -> None:
    assert shell.balanced_json(source, 1) == expected
