"""Item pipelines of traverse_crawl."""
