"""The crawl: seeds, the BFS frontier and its queue and spool, the spider, the scheduler, stops."""
