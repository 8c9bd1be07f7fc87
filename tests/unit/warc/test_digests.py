"""The payload digests kept for revisits: in the store, moved there from an old WARC folder."""

from __future__ import annotations

import json
import os

import pytest

from traverse_crawl.warc.digests import FILE_NAME, DigestIndex, migrate
from traverse_crawl.warc.records import Written

REF = "traverse-snapshot:s?url=x"
OLD = json.dumps({"sourceRef": REF, "url": "http://a/", "date": "d", "digest": "sha1:OLD"})
PRIOR = {"fetchedAt": "2026-01-01T00:00:00.000Z", "url": "http://a/", "body": "decoded"}


def test_digests_are_kept_at_the_store_root_and_read_back(tmp_path):
    store, warc_dir = tmp_path / "store", tmp_path / "warc"
    index = DigestIndex(str(store), str(warc_dir))
    index.add(REF, Written("", "2026-01-01T00:00:00Z", "http://a/", "sha1:RAW"))
    index.close()
    assert os.listdir(store) == [FILE_NAME]
    assert not warc_dir.exists()
    again = DigestIndex(str(store), str(warc_dir))
    assert again.earlier(REF, PRIOR).payload_digest == "sha1:RAW"


def test_an_old_folders_file_is_moved_once_and_its_lines_kept(tmp_path):
    store, warc_dir = tmp_path / "store", tmp_path / "warc"
    warc_dir.mkdir()
    (warc_dir / FILE_NAME).write_text(OLD + "\n" + '{"sourceRef": "cut')  # a torn last line
    assert migrate(str(warc_dir), str(store)) == str(warc_dir / FILE_NAME)
    assert os.listdir(warc_dir) == []
    assert migrate(str(warc_dir), str(store)) is None
    found = DigestIndex(str(store), str(warc_dir)).earlier(REF, PRIOR)
    assert (found.url, found.date, found.payload_digest) == ("http://a/", "d", "sha1:OLD")


def test_an_old_file_that_cannot_be_moved_is_still_read(tmp_path):
    store, warc_dir = tmp_path / "store", tmp_path / "warc"
    warc_dir.mkdir()
    (warc_dir / FILE_NAME).write_text(OLD + "\n")
    store.write_text("")  # not a directory: nothing can be written there
    with pytest.raises(OSError):
        migrate(str(warc_dir), str(store))
    assert os.listdir(warc_dir) == [FILE_NAME]
    found = DigestIndex(str(store), str(warc_dir)).earlier(REF, PRIOR)
    assert found.payload_digest == "sha1:OLD"
