"""Custom signals of traverse_crawl.

``seed_started(frontier, seed_key)``: a seed's frontier exists (before its first request).
``seed_finished(frontier, seed_key)``: a seed's BFS has recorded its last page.
``page_captured(response, snapshot, source_ref)``: a response to a request that is not a
frontier page reached the spider (``snapshot`` None: it has none, e.g. a 404).
``manifest_written(seed_id, path)``: a seed's manifest is on disk at ``path`` (a fallback
file's path when the manifest directory could not take it).
``request_failed(request, error)``: a request of any spider failed for good, with its
typed ``FetchError``.
"""

seed_started = object()
seed_finished = object()
page_captured = object()
manifest_written = object()
request_failed = object()
