"""Scrapy commands of traverse_crawl (``COMMANDS_MODULE``)."""
