"""Benchmarks of traverse_crawl (docs/performance.md); run ``python bench/run.py --help``."""
