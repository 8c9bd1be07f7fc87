"""When to retry and how long to wait (``politeness/retry.py``)."""

from __future__ import annotations

import pytest

from traverse_crawl.politeness.retry import parse_retry_after, retry_wait


@pytest.mark.parametrize("value", ["\xb2", "1\xb2", "\u0661", "soon", "Mon, 99 Foo 2026"])
def test_unparsable_retry_after_is_ignored(value):
    assert parse_retry_after(value) is None
    assert retry_wait(1, 0.25, value, 30.0, lambda: 0.5) == 0.25
