"""The report's checks section: failing checks first, examples with their sourceRef,
every text from the file escaped, and a file that is not a checks document ignored."""

from __future__ import annotations

from traverse_crawl.reports.checks_section import checks_section

DOC = {
    "results": [
        {"check": "crawl.min_pages", "measured": 9, "threshold": 5, "passed": True},
        {
            "check": "items.card.coverage.price",
            "measured": 0.5,
            "threshold": 1.0,
            "passed": False,
            "examples": [
                {
                    "url": "http://x/<script>",
                    "sourceRef": "traverse-snapshot:a?b=1&c=2",
                    "field": "price",
                    "value": None,
                    "span": [3, 9],
                },
            ],
        },
        "not a result",
    ]
}


def test_failing_checks_first_with_their_examples_escaped():
    html = checks_section(DOC, "m.checks.json")
    assert '<span class="checks-failed">1</span> failed of 2' in html
    assert html.index("items.card.coverage.price") < html.index("crawl.min_pages")
    assert "http://x/&lt;script&gt;" in html and "<script>" not in html
    assert "traverse-snapshot:a?b=1&amp;c=2" in html
    assert "[3, 9]" in html


def test_not_a_checks_document():
    assert checks_section({"results": "x"}, "m.checks.json") == ""
