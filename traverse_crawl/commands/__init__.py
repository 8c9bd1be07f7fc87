"""Scrapy commands of traverse_crawl (``COMMANDS_MODULE``)."""

import atexit

# Scrapy imports this package first whenever it looks for commands, at the start of
# every command. Its HTTP/1.1 download handler, which every crawl uses, is imported
# here, before anything else of the project: its TLS modules call ``inspect.stack()``
# three times while they are imported, whose cost grows with the import nesting and
# the number of modules loaded (imported from deep inside the project's own imports,
# about 30 ms more of every start-up).
import scrapy.core.downloader.handlers.http11  # noqa: F401

from traverse_crawl.runtime.heap_extension import freeze_at_exit

# Every command of the project ends with the process: its exit skips the interpreter's
# last walk of the heap (runtime/heap_extension.py).
atexit.register(freeze_at_exit)
