"""What a distributed crawl's worker asks of the spider it feeds (``TraverseSpider``).

The worker (``traverse_crawl/distributed/worker.py``) takes pages from Redis; the
spider turns each into its request and each outcome into its item, as in one
process. These four methods are all the worker uses of the spider. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from traverse_crawl.crawl.frontier import Admission, Frontier, Outcome
from traverse_crawl.crawl.seeds import Seed


class WorkerSpider(Protocol):
    def add_seeds(self, seeds: Sequence[Seed]) -> None:
        """More of the crawl's seeds, after those the spider has, in key order.

        A distributed crawl's seeds are the ones in Redis, learned as their pages
        are taken; its spider starts with none (its arguments' go to Redis).
        """

    def frontier(self, seed_key: int) -> Frontier:
        """The seed's frontier, made on the first call when the worker joins the seed."""

    def page_request(self, seed_key: int, admission: Admission) -> Any:
        """The request (a Scrapy ``Request``) for an admitted page of the seed."""

    def store_exists(self) -> bool:
        """Whether replay has a store to read."""

    def finish_page(self, seed_key: int, index: int, outcome: Outcome) -> Iterator[Any]:
        """Record a page's outcome: what the spider yields for it (its item)."""
