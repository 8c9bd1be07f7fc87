"""The pure core of traverse_crawl: plain Python, no Scrapy imports.

Scrapy components (spider, middlewares, pipelines) only translate between these
modules and Scrapy objects (STYLE §1).
"""
