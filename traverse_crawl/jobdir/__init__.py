"""Pause and resume: the crawl's state kept in JOBDIR."""
