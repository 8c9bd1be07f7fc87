"""The public API: every name of ``traverse_crawl.__all__`` resolves, the package's import
loads nothing of Scrapy (the child processes import it), and the store reads by page id
and by ``sourceRef``.
"""

from __future__ import annotations

import json
import marshal
import re
import subprocess
import sys

import pytest

import traverse_crawl
from tests.support.cli import REPO
from traverse_crawl.snapshots.model import build_snapshot
from traverse_crawl.utils.child_process import command
from traverse_crawl.utils.frames import LENGTH, frame

SCRAPY_STACK = ("scrapy", "twisted", "playwright", "scrapy_playwright")


def loaded_after(code: str, *flags: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code`` from the repo."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            *flags,
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO)!r})\n{script}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def stack(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in SCRAPY_STACK)


def unresolved(name: str) -> str | None:
    try:
        getattr(traverse_crawl, name)
    except (AttributeError, ImportError) as exc:
        return f"{name}: {exc}"
    return None


def test_every_public_name_resolves():
    assert [why for name in traverse_crawl.__all__ if (why := unresolved(name))] == []
    assert set(traverse_crawl.__all__) <= set(dir(traverse_crawl))
    assert traverse_crawl.__version__ == "0.1.0"
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        traverse_crawl.nothing_here  # noqa: B018


def test_the_settings_page_lists_the_public_api():
    text = (REPO / "docs" / "settings.md").read_text(encoding="utf-8")
    section = text.split("## Public API", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([A-Za-z_]+)` \|", section, flags=re.MULTILINE)
    assert sorted(listed) == sorted(traverse_crawl.__all__)


def test_the_names_are_the_defining_modules_own():
    from traverse_crawl.errors import FetchError
    from traverse_crawl.snapshots.store import FilesystemSnapshotStore
    from traverse_crawl.spider import TraverseSpider

    assert traverse_crawl.TraverseSpider is TraverseSpider
    assert traverse_crawl.FetchError is FetchError
    assert traverse_crawl.FilesystemSnapshotStore is FilesystemSnapshotStore


def test_importing_the_package_loads_nothing_of_scrapy():
    assert stack(loaded_after("import traverse_crawl")) == []
    # The store's read API and the typed error need no Scrapy either.
    names = "FetchError, FilesystemSnapshotStore, Snapshot, build_source_ref, parse_source_ref"
    assert stack(loaded_after(f"from traverse_crawl import {names}")) == []


@pytest.mark.parametrize(
    ("module", "site_packages"),
    [
        ("traverse_crawl.snapshots.writer_child", False),
        ("traverse_crawl.replay.reader_child", True),
    ],
)
def test_the_child_processes_import_no_scrapy(module, site_packages):
    """Each child as the crawl starts it (the writer without site-packages: ``-S``)."""
    flags = () if site_packages else ("-S",)
    assert stack(loaded_after(f"import {module}", *flags)) == []


def test_the_writer_process_starts_as_a_capture_starts_it():
    """The capture's own command line (no site-packages) runs the writer to its summary."""
    done = subprocess.run(
        command("traverse_crawl.snapshots.writer_child", False),
        input=frame({"use_syncfs": False}),  # then EOF: nothing to write
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    (size,) = LENGTH.unpack_from(done.stdout)
    summary = marshal.loads(done.stdout[LENGTH.size : LENGTH.size + size])
    assert (summary["batches"], summary["files"], summary["failed"]) == (0, 0, 0)


def test_the_store_reads_a_snapshot_by_page_id_and_by_source_ref(tmp_path):
    store = traverse_crawl.FilesystemSnapshotStore(str(tmp_path))
    page_id = "shop::http://a.test/"
    first = build_snapshot(
        source_id=page_id,
        url="http://a.test/",
        status=200,
        content_type="html",
        raw_body=b"<p>one</p>",
        content_type_header="text/html; charset=utf-8",
        fetched_at="2026-01-01T00:00:00.000Z",
    )
    second = {**first, "fetchedAt": "2026-01-02T00:00:00.000Z"}
    store.put(first)
    store.put(second)
    assert store.latest(page_id) == second  # the page's newest capture, as replay serves it
    ref = traverse_crawl.build_source_ref(first)
    assert store.get_by_source_ref(ref) == first  # exactly the capture the ref names
    parsed = traverse_crawl.parse_source_ref(ref)
    assert parsed == traverse_crawl.SourceRef(
        page_id, first["url"], first["bodyHash"], first["fetchedAt"]
    )
    other = traverse_crawl.build_source_ref({**first, "fetchedAt": "2026-01-03T00:00:00.000Z"})
    assert store.get_by_source_ref(other) is None
    with pytest.raises(ValueError, match="not a traverse-snapshot sourceRef"):
        store.get_by_source_ref("https://a.test/")
