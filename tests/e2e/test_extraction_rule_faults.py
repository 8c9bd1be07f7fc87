"""Extraction rules that would fail on pages, or that are built to break the reader, stop
``scrapy crawl`` (and ``scrapy extract``) before any request with one line and exit
status 2; a selector that fails only on some page's data never loses that page; and one
page's items are bounded in bytes, not only in count."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import crawl_args, scrapy
from tests.support.server import Server

PAGES = {
    "/": '<html><body><h1>Home</h1><a href="/a">a</a> <a href="/b">b</a> <a href="/c">c</a>'
    "</body></html>",
    "/a": '<html><body><h1>A</h1><p class="price">12</p><a href="/d">d</a></body></html>',
    "/b": '<html><head><meta name="pattern" content="("></head>'
    '<body><h1>B</h1><p class="price">7</p><a href="/e">e</a></body></html>',
    "/c": "<html><body><h1>C</h1></body></html>",
    "/d": "<html><body><h1>D</h1></body></html>",
    "/e": "<html><body><h1>E</h1></body></html>",
}


def rules_args(tmp_path: Path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return [
        "-s", f"TRAVERSE_EXTRACT={path}",
        "-s", f"TRAVERSE_ITEMS_DIR={tmp_path / 'items'}",
    ]  # fmt: skip


def run_crawl(server: Server, tmp_path: Path, *more: str) -> object:
    return scrapy(
        "crawl", "traverse", *crawl_args(tmp_path, server.origin),
        "-a", f"url={server.url('/')}", "-a", "source_id=site", *more,
    )  # fmt: skip


def page_rules(title: str = '"css:h1::text"', where: str = "") -> str:
    return f'[[types]]\nname = "page"\n{where}[types.fields]\ntitle = {title}\n'


def assert_refused_at_start(server: Server, tmp_path: Path, args: list[str], line: str) -> None:
    run = run_crawl(server, tmp_path, *args)
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [x for x in run.stderr.splitlines() if "error:" in x]
    assert len(errors) == 1 and line in errors[0], run.stderr[-3000:]
    assert len(errors[0]) < 400  # one short line, whatever the file holds
    assert "Traceback" not in run.stderr
    assert server.hits == []
    offline = scrapy("extract", *args, "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
                     "-s", f"TRAVERSE_STORE={tmp_path / 'store'}")  # fmt: skip
    assert offline.returncode == 2, offline.stderr[-3000:]
    assert offline.stderr.startswith(line) and "Traceback" not in offline.stderr


# Each compiles, and each fails whenever it is evaluated: before, every html page of the
# crawl became a `network` error and the crawl stopped at its seed.
FAILS_WHEN_EVALUATED = [
    (page_rules('"xpath:normalise-space(//h1)"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath "
     "'normalise-space(//h1)': Unregistered function"),
    (page_rules('"xpath://x:h1/text()"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath '//x:h1/text()': "
     "Undefined namespace prefix"),
    (page_rules('"xpath:count(1)"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath 'count(1)': "
     "Invalid type"),
    (page_rules("\"xpath:re:test(., '(')\""),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath \"re:test(., '(')\": "
     "invalid regular expression in the XPath: missing )"),
    # Where the small page never reaches: in a predicate, looked up all the same.
    (page_rules('"xpath://nothing[normalise-space(.)]"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath "
     "'//nothing[normalise-space(.)]': unknown function normalise-space()"),
    (page_rules('"xpath://h1[$wanted]"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath '//h1[$wanted]': "
     "undefined variable $wanted"),
    (page_rules(where='require = "xpath:count(1)"\n'),
     "error: TRAVERSE_EXTRACT: type 'page', 'require': invalid XPath 'count(1)': Invalid type"),
    (page_rules(where='each = "xpath://section[x:y]"\n'),
     "error: TRAVERSE_EXTRACT: type 'page', 'each': invalid XPath '//section[x:y]': "
     "undefined namespace prefix in x:y"),
    (page_rules('{ selector = "xpath:substring()", many = true }'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath 'substring()': "
     "Invalid number of arguments"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rules", "line"),
    FAILS_WHEN_EVALUATED,
    ids=["unknown-function", "undefined-prefix", "wrong-type", "bad-exslt-pattern",
         "function-in-a-predicate", "variable", "require", "each", "many-field"],
)  # fmt: skip
def test_a_selector_that_fails_when_evaluated_stops_the_crawl_at_start(
    server, tmp_path, rules, line
):
    server.site(PAGES)
    assert_refused_at_start(server, tmp_path, rules_args(tmp_path, "x.toml", rules), line)


def nested_json(depth: int) -> str:
    return '{"types": ' + "[" * depth + "]" * depth + "}"


def nested_toml(depth: int) -> str:
    return "types = " + "[" * depth + "]" * depth + "\n"


# Built to break the reader: before, each was a Python traceback.
HOSTILE_FILES = [
    ("deep.json", nested_json(100_000),
     "error: TRAVERSE_EXTRACT: the file '{path}' is nested too deeply"),
    ("deep.toml", nested_toml(100_000),
     "error: TRAVERSE_EXTRACT: the file '{path}' is nested too deeply"),
    ("deep-re.toml",
     page_rules("{ selector = 'css:h1::text', re = '" + "(" * 10_000 + "a" + ")" * 10_000 + "' }"),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid regular expression '(((("),
    ("nul.json",
     json.dumps({"types": [{"name": "page", "fields": {"title": "xpath://h1\u0000"}}]}),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath '//h1\\x00': All "
     "strings must be XML compatible"),
    ("deep-xpath.toml", page_rules('"xpath:' + "(" * 100_000 + "1" + ")" * 100_000 + '"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid XPath '(((("),
    ("deep-css.toml", page_rules('"css:' + "a " * 50_000 + 'b"'),
     "error: TRAVERSE_EXTRACT: type 'page', field 'title': invalid CSS selector 'a a a"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "line"), HOSTILE_FILES, ids=[f[0] for f in HOSTILE_FILES])
def test_a_hostile_extraction_file_is_one_line_and_exit_2(server, tmp_path, name, text, line):
    server.site(PAGES)
    args = rules_args(tmp_path, name, text)
    assert_refused_at_start(server, tmp_path, args, line.format(path=tmp_path / name))


def manifest_pages(tmp_path: Path) -> dict[str, dict]:
    (path,) = (tmp_path / "manifests").glob("*.json")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {page["url"].rsplit("/", 1)[1] or "/": page for page in manifest["pages"]}


WHERE = pytest.mark.parametrize("in_process", ["True", "False"], ids=["process", "thread"])


@WHERE
def test_a_selector_that_fails_on_one_pages_data_never_loses_the_page(server, tmp_path, in_process):
    # The pattern comes from the page: only /b's, "(", is not a regular expression.
    rules = page_rules(where='require = "xpath://h1[re:test(., string(//meta[@name=\'pattern\']'
                             '/@content))] | //h1[not(//meta[@name=\'pattern\'])]"\n')  # fmt: skip
    rules += 'price = "xpath://p[re:test(., string(//meta/@content))]/text()"\n'
    server.site(PAGES)
    run = run_crawl(
        server, tmp_path, *rules_args(tmp_path, "x.toml", rules),
        "-s", f"TRAVERSE_EXTRACT_PROCESS={in_process}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    pages = manifest_pages(tmp_path)
    # Every page is recorded as fetched, and the BFS went on past the page that failed.
    assert sorted(pages) == ["/", "a", "b", "c", "d", "e"]
    assert all("snapshot" in p["fetch"] and "error" not in p["fetch"] for p in pages.values())
    warnings = pages["b"]["fetch"]["warnings"]
    assert any(
        "type 'page': its 'require' selector failed on this page (invalid regular expression" in w
        for w in warnings
    ), warnings
    (items_file,) = (tmp_path / "items").glob("*.jsonl")
    items = [json.loads(line) for line in items_file.read_text(encoding="utf-8").splitlines()]
    titles = sorted(item["fields"]["title"] for item in items)
    assert titles == ["A", "C", "D", "E", "Home"]  # /b's type was skipped, nothing else
    assert next(i for i in items if i["fields"]["title"] == "A")["fields"]["price"] == "12"


@WHERE
def test_a_field_that_fails_on_a_page_is_missing_with_a_page_warning(server, tmp_path, in_process):
    rules = page_rules() + 'price = "xpath://p[re:test(., string(//meta/@content))]/text()"\n'
    server.site(PAGES)
    run = run_crawl(
        server, tmp_path, *rules_args(tmp_path, "x.toml", rules),
        "-s", f"TRAVERSE_EXTRACT_PROCESS={in_process}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    pages = manifest_pages(tmp_path)
    assert sorted(pages) == ["/", "a", "b", "c", "d", "e"]
    assert "snapshot" in pages["b"]["fetch"] and "error" not in pages["b"]["fetch"]
    assert pages["b"]["fetch"]["warnings"] == [
        "extraction: field 'price' of type 'page': its selector failed on this page (invalid "
        "regular expression in the XPath: missing ), unterminated subpattern at position 0); "
        "the field is missing"
    ]
    (items_file,) = (tmp_path / "items").glob("*.jsonl")
    items = {json.loads(line)["fields"]["title"]: json.loads(line)
             for line in items_file.read_text(encoding="utf-8").splitlines()}  # fmt: skip
    assert items["B"]["missing"] == ["price"] and "price" not in items["B"]["evidence"]
    assert items["A"]["fields"]["price"] == "12"


def nested_cards(count: int, text: int) -> str:
    card = '<div class="card"><h2>card {i}</h2><p>' + "x" * text + "</p>"
    return (
        "<html><body>" + "".join(card.format(i=i) for i in range(count)) + "</div>" * count
        + "</body></html>"
    )  # fmt: skip


@WHERE
def test_one_pages_items_are_bounded_in_bytes_with_a_page_warning(server, tmp_path, in_process):
    # Each card's markup holds every card nested in it: 400 cards of 150 bytes give
    # about 24 MB of items from a 70 KB page.
    rules = (
        '[[types]]\nname = "card"\neach = "css:div.card"\n[types.fields]\n'
        'title = "css:h2::text"\nwhole = "xpath:."\n'
    )
    server.site({"/": nested_cards(400, 150)})
    bound = 2_000_000
    run = run_crawl(
        server, tmp_path, *rules_args(tmp_path, "x.toml", rules),
        "-s", f"TRAVERSE_MAX_ITEM_BYTES_PER_PAGE={bound}",
        "-s", f"TRAVERSE_EXTRACT_PROCESS={in_process}",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    (items_file,) = (tmp_path / "items").glob("*.jsonl")
    size = items_file.stat().st_size
    lines = items_file.read_bytes().splitlines()
    assert 0 < size <= bound
    assert len(lines) < 400
    page = manifest_pages(tmp_path)["/"]
    assert "snapshot" in page["fetch"] and "error" not in page["fetch"]
    assert page["fetch"]["warnings"] == [
        f"extraction: more than {bound} bytes of items on this page; the first {len(lines)} "
        "item(s) were kept (TRAVERSE_MAX_ITEM_BYTES_PER_PAGE)"
    ]
    # The first items, whole: the cards in document order.
    assert [json.loads(line)["fields"]["title"] for line in lines[:3]] == [
        "card 0", "card 1", "card 2",
    ]  # fmt: skip
    # scrapy extract, offline, keeps the same bound: the same bytes.
    before = items_file.read_bytes()
    again = scrapy(
        "extract", *rules_args(tmp_path, "x.toml", rules),
        "-s", f"TRAVERSE_MAX_ITEM_BYTES_PER_PAGE={bound}",
        "-s", f"TRAVERSE_STORE={tmp_path / 'store'}",
        "-s", f"TRAVERSE_MANIFEST_DIR={tmp_path / 'manifests'}",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert "TRAVERSE_MAX_ITEM_BYTES_PER_PAGE" in again.stderr
    assert items_file.read_bytes() == before
