"""The bundled demo site and the README's main job (``python -m traverse_crawl.demo``)."""
