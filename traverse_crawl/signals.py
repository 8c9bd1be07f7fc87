"""Custom signals of traverse_crawl.

``seed_finished(frontier, seed_key)``: a seed's BFS has recorded its last page.
"""

seed_finished = object()
