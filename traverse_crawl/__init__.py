"""traverse_crawl: a polite, reproducible same-origin BFS crawler built on Scrapy."""

__version__ = "0.1.0"
