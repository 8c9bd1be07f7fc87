"""Reading a seeds file (``crawl/seeds.py``)."""

from __future__ import annotations

from traverse_crawl.crawl.seeds import read_seeds


def test_seeds_file_with_a_utf8_bom(tmp_path):
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes("\ufeffhome\thttp://example.test/\nhttp://example.test/b\n".encode())
    assert [(s.id, s.url) for s in read_seeds(str(seeds))] == [
        ("home", "http://example.test/"),
        ("http://example.test/b", "http://example.test/b"),
    ]
