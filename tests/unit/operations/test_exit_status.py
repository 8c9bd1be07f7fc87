"""The one exit-status table: 2 over 1 over 3 over 0, by a crawl's final stats."""

from __future__ import annotations

import pytest

from traverse_crawl.operations.exit_status import crawl_status


@pytest.mark.parametrize(
    ("stats", "process_failed", "status"),
    [
        ({}, False, 0),
        ({"checks/passed": 4}, False, 0),
        ({"checks/failed": 1}, False, 3),
        ({"checks/failed": 1, "traverse/lost": 1}, False, 1),
        ({"checks/failed": 1, "feedexport/failed_count/FileFeedStorage": 1}, False, 1),
        ({"checks/failed": 2}, True, 1),
        ({"checks/failed": 1, "traverse/lost": 1, "traverse/start_refused": "JOBDIR"}, False, 2),
    ],
)
def test_the_exit_status_of_a_crawl_that_ran(stats, process_failed, status):
    assert crawl_status(stats, process_failed) == status
