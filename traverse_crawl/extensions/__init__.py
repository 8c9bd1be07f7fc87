"""Scrapy extensions of traverse_crawl."""
