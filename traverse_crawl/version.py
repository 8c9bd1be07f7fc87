"""The package's version, apart from ``traverse_crawl/__init__.py`` so that modules
can name it without importing the public API (which names them)."""

__version__ = "0.1.0"
