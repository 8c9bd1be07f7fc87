"""Custom signals of traverse_crawl.

``seed_started(frontier, seed_key)``: a seed's frontier exists (before its first request).
``seed_finished(frontier, seed_key)``: a seed's BFS has recorded its last page.
"""

seed_started = object()
seed_finished = object()
