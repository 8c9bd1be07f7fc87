"""Distributed crawls: many workers of one crawl whose state lives in Redis.

See docs/distributed.md.
"""
