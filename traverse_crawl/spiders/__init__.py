"""Spiders of the traverse_crawl project."""
