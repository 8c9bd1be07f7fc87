"""Downloader middlewares of traverse_crawl; their order is in settings.py."""
